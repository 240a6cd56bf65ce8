"""Runs Batch API jobs end to end with the official `openai` Python SDK, and nothing else.

Usage: batch_roundtrip.py ENDPOINT=FILE.jsonl [ENDPOINT=FILE.jsonl ...]

The client reads OPENAI_BASE_URL and OPENAI_API_KEY. Each file is uploaded with purpose "batch" and a
batch is created for it on its endpoint (all of them before the first is awaited, so they run side by
side); each batch is polled until it ends, then its output and error files are read, and last the key's
batches are listed, LIST_PAGE to a page. One JSON line goes to stdout:
{"batches": [{"input_file_id", "created", "batch", "output", "errors"}, ...], "listed": [id, ...]}, the
batches in the order given, where "created" is the create's answer, "batch" the final retrieve, "output"
and "errors" the files' parsed lines, and "listed" the ids of every page of the listing.
"""

import json
import sys
import time

from openai import OpenAI

ENDED = {"completed", "failed", "expired", "cancelled"}
POLL_SECONDS = 0.1
TIMEOUT_SECONDS = 60.0
# Small, so that the listing takes more than one page.
LIST_PAGE = 4


def lines_of(client, file_id):
    if file_id is None:
        return []
    text = client.files.content(file_id).text
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def submit(client, endpoint, path):
    with open(path, "rb") as file:
        uploaded = client.files.create(file=file, purpose="batch")
    batch = client.batches.create(
        input_file_id=uploaded.id,
        endpoint=endpoint,
        completion_window="24h",
        metadata={"client": "openai-python"},
    )
    return uploaded.id, batch


def ended(client, batch_id):
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while True:
        batch = client.batches.retrieve(batch_id)
        if batch.status in ENDED:
            return batch
        if time.monotonic() > deadline:
            raise TimeoutError(f"batch {batch_id} still {batch.status} after {TIMEOUT_SECONDS} s")
        time.sleep(POLL_SECONDS)


def main(args):
    if not args or any("=" not in arg for arg in args):
        sys.exit(__doc__)
    client = OpenAI(max_retries=0)
    submitted = [submit(client, *arg.split("=", 1)) for arg in args]
    summaries = []
    for input_file_id, created in submitted:
        batch = ended(client, created.id)
        summaries.append(
            {
                "input_file_id": input_file_id,
                "created": created.model_dump(mode="json"),
                "batch": batch.model_dump(mode="json"),
                "output": lines_of(client, batch.output_file_id),
                "errors": lines_of(client, batch.error_file_id),
            }
        )
    listed = [batch.id for batch in client.batches.list(limit=LIST_PAGE)]
    print(json.dumps({"batches": summaries, "listed": listed}))


if __name__ == "__main__":
    main(sys.argv[1:])
