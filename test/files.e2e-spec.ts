import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { NotFoundError } from 'openai';
import { Stack } from './support/stack';

const MAX_BYTES = 4096;
const ADMIN_TOKEN = `admin-${randomBytes(16).toString('hex')}`;
const MAX_LINES = 20;

/** A batch input file of `lines` requests, as JSONL. */
function batchLines(lines: number): string {
  return Array.from(
    { length: lines },
    (_, i) =>
      `${JSON.stringify({ custom_id: `r${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'sim-chat', messages: [{ role: 'user', content: `hi ${i}` }] } })}\n`,
  ).join('');
}

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/**
 * The Files API through the gateway as it runs (a directory store of the test's own, small limits): the
 * official `openai` SDK's round trip, ownership between two keys, and OpenAI's refusals of bad uploads,
 * each leaving nothing stored.
 */
describe('files (/v1/files)', () => {
  let otherKey: string;
  let stack: Stack;
  let dir: string;
  let storeDir: string;
  let owner: OpenAI;
  let other: OpenAI;

  /** What the store and Redis hold of files: nothing, after a refused upload. */
  async function stored(): Promise<{ objects: string[]; partial: string[]; records: string[] }> {
    const list = async (path: string) =>
      (await readdir(path).catch(() => [])).filter((n) => n !== '.partial');
    return {
      objects: await list(storeDir),
      partial: await list(join(storeDir, '.partial')),
      records: await stack.redis.keys(`${stack.namespace}:files:*:f:*`),
    };
  }

  async function upload(body: RequestInit['body'], headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${stack.baseUrl}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.apiKey}`, ...headers },
      body,
      ...(body instanceof ReadableStream && { duplex: 'half' }),
    });
  }

  function form(parts: { purpose?: string; file?: string }): FormData {
    const data = new FormData();
    if (parts.file !== undefined) data.append('file', new Blob([parts.file]), 'input.jsonl');
    if (parts.purpose !== undefined) data.append('purpose', parts.purpose);
    return data;
  }

  async function refusedWith(response: Response, status: number, param: string | null): Promise<ErrorBody> {
    const body = (await response.json()) as ErrorBody;
    expect({ status: response.status, type: body.error.type, param: body.error.param }).toEqual({
      status,
      type: 'invalid_request_error',
      param,
    });
    return body;
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mgw-files-e2e-'));
    storeDir = join(dir, 'store');
    stack = await Stack.start({
      without: ['chat-worker', 'image-worker'],
      waitForModels: [],
      appEnv: {
        gateway: {
          FILES_DIR: storeDir,
          FILES_MAX_BYTES: String(MAX_BYTES),
          FILES_MAX_LINES: String(MAX_LINES),
        },
      },
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
    });
    const created = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'files-other' }),
    });
    expect(created.status).toBe(201);
    otherKey = ((await created.json()) as { key: string }).key;
    owner = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
    other = new OpenAI({ apiKey: otherKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  });

  afterAll(async () => {
    await stack?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('uploads a JSONL file with the SDK, lists, retrieves, downloads and deletes it', async () => {
    const content = batchLines(3);
    const path = join(dir, 'requests.jsonl');
    await writeFile(path, content);

    const file = await owner.files.create({ file: createReadStream(path), purpose: 'batch' });
    expect(file).toMatchObject({
      object: 'file',
      bytes: Buffer.byteLength(content),
      filename: 'requests.jsonl',
      purpose: 'batch',
      status: 'processed',
    });
    expect(file.id).toMatch(/^file-/);

    const listed = await owner.files.list({ purpose: 'batch' });
    expect(listed.data.map((f) => f.id)).toEqual([file.id]);
    expect(await owner.files.retrieve(file.id)).toEqual(file);
    expect(await (await owner.files.content(file.id)).text()).toBe(content);

    expect(await owner.files.delete(file.id)).toEqual({ id: file.id, object: 'file', deleted: true });
    await expect(owner.files.retrieve(file.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(await stored()).toEqual({ objects: [], partial: [], records: [] });
  });

  it("answers another key's file as an unknown one (404, OpenAI's words), and lists none of it", async () => {
    const file = await owner.files.create({
      file: new File([batchLines(1)], 'mine.jsonl'),
      purpose: 'batch',
    });
    for (const [method, suffix] of [
      ['GET', ''],
      ['GET', '/content'],
      ['DELETE', ''],
    ] as const) {
      const response = await fetch(`${stack.baseUrl}/v1/files/${file.id}${suffix}`, {
        method,
        headers: { authorization: `Bearer ${otherKey}` },
      });
      const body = await refusedWith(response, 404, 'id');
      expect(body.error.message).toBe(`No such File object: ${file.id}`);
    }
    expect((await other.files.list()).data).toEqual([]);
    expect(await owner.files.retrieve(file.id)).toEqual(file);
    await owner.files.delete(file.id);
  });

  it('refuses an upload without a file, with a purpose not allowed, or not multipart (400), storing nothing', async () => {
    await refusedWith(await upload(form({ purpose: 'batch' })), 400, 'file');
    await refusedWith(await upload(form({ file: batchLines(1) })), 400, 'purpose');
    const purpose = await refusedWith(
      await upload(form({ file: batchLines(1), purpose: 'fine-tune' })),
      400,
      'purpose',
    );
    expect(purpose.error.message).toContain("'fine-tune' is not one of ['batch']");
    // The SDK sends the file before the purpose: the purpose is checked once the form is read.
    await expect(
      owner.files.create({ file: new File([batchLines(1)], 'a.jsonl'), purpose: 'batch_output' as 'batch' }),
    ).rejects.toMatchObject({ status: 400, param: 'purpose' });
    await refusedWith(
      await upload(JSON.stringify({ purpose: 'batch' }), { 'content-type': 'application/json' }),
      400,
      null,
    );
    const unauthenticated = await fetch(`${stack.baseUrl}/v1/files`, {
      method: 'POST',
      body: form({ purpose: 'batch' }),
    });
    expect(unauthenticated.status).toBe(401);
    // Other routes answer a multipart body as before: not JSON, 415.
    const elsewhere = await fetch(`${stack.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.apiKey}` },
      body: form({ purpose: 'batch', file: batchLines(1) }),
    });
    await refusedWith(elsewhere, 415, null);
    expect(await stored()).toEqual({ objects: [], partial: [], records: [] });
  });

  it('refuses a file over the byte limit with 413 (from its length, or mid-stream) and one over the line limit, storing nothing', async () => {
    const big = 'x'.repeat(MAX_BYTES + 1);
    await refusedWith(await upload(form({ purpose: 'batch', file: big })), 413, 'file');

    // Streamed without a Content-Length: refused when the byte past the limit arrives.
    const encoder = new TextEncoder();
    const boundary = `----mgw${randomBytes(8).toString('hex')}`;
    const chunks = [
      `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n\r\n`,
      ...Array.from({ length: 8 }, () => 'y'.repeat(1024)),
      `\r\n--${boundary}--\r\n`,
    ];
    const streamed = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(encoder.encode(next));
      },
    });
    const answer = await upload(streamed, { 'content-type': `multipart/form-data; boundary=${boundary}` });
    const body = await refusedWith(answer, 413, 'file');
    expect(body.error.code).toBe('file_too_large');

    const lines = await refusedWith(
      await upload(form({ purpose: 'batch', file: '{}\n'.repeat(MAX_LINES + 1) })),
      400,
      'file',
    );
    expect(lines.error.code).toBe('too_many_lines');
    const atTheLimit = await upload(form({ purpose: 'batch', file: '{}\n'.repeat(MAX_LINES) }));
    expect(atTheLimit.status).toBe(200);
    await owner.files.delete(((await atTheLimit.json()) as { id: string }).id);
    expect(await stored()).toEqual({ objects: [], partial: [], records: [] });
  });
});
