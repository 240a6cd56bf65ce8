/** The batches commands' part of the CLI's usage (a file of its own: keys.cli imports it, batches.cli imports keys.cli). */
export const BATCHES_USAGE = `Batches (through the gateway's /v1 API, as an API key: batches belong to keys):
  batches create FILE.jsonl --endpoint /v1/chat/completions|/v1/responses|/v1/embeddings
         [--metadata k=v]…   uploads FILE (purpose batch) through /v1/files, then creates its batch
  batches watch ID [--out DIR] [--interval MS]
                      prints request_counts as they move until the batch ends; --out DIR then
                      downloads its output and error files into DIR
  batches list [--limit N] [--after ID] | batches show ID | batches cancel ID
  Every batches command takes --model-key KEY (the API key) and --gateway URL
  (default http://127.0.0.1:8080).`;
