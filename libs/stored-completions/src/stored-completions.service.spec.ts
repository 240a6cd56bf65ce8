import type { Principal } from '@mgw/access';
import { type ChatCompletion } from '@mgw/contracts';
import type { StoredCompletionStore } from './stored-completion.store';
import type { StoredRecord } from './stored-completion.reader';
import { StoredCompletions } from './stored-completions.service';
import { refusalOf } from '@mgw/testing';

const principal: Principal = {
  keyId: 'key_000000000000000000000001',
  name: 'k',
  bootstrap: false,
  models: null,
  rpm: null,
  tpm: null,
  maxConcurrent: null,
  priority: 'normal',
  weight: 1,
};
const id = 'chatcmpl-0123456789abcdef';

const completion: ChatCompletion = {
  id,
  object: 'chat.completion',
  created: 1,
  model: 'sim-chat',
  system_fingerprint: 'fp_x',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'hi' }, logprobs: null, finish_reason: 'stop' },
  ],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
};
const record: StoredRecord = {
  id,
  keyId: principal.keyId,
  model: 'sim-chat',
  createdMs: 1000,
  metadata: { a: 'b' },
  completion,
};

function serviceWith(store: Partial<Record<keyof StoredCompletionStore, jest.Mock>>): StoredCompletions {
  return new StoredCompletions(store as unknown as StoredCompletionStore);
}

describe('StoredCompletions', () => {
  it('answers a stored completion with its metadata, and 404 for one the key does not have', async () => {
    const get = jest.fn().mockResolvedValueOnce(record).mockResolvedValueOnce(null);
    const service = serviceWith({ get });
    expect(await service.retrieve(principal, id)).toEqual({ ...completion, metadata: { a: 'b' } });
    const error = await refusalOf(service.retrieve(principal, id));
    expect(error.status).toBe(404);
    expect(error.toBody().error).toMatchObject({ type: 'invalid_request_error', code: 'not_found' });
    expect(get).toHaveBeenCalledWith(principal.keyId, id);
  });

  it('refuses a malformed id with 400 before asking the store', async () => {
    const get = jest.fn();
    for (const call of [
      (s: StoredCompletions) => s.retrieve(principal, 'nope'),
      (s: StoredCompletions) => s.delete(principal, 'chatcmpl-'),
      (s: StoredCompletions) => s.update(principal, '../x', {}),
      (s: StoredCompletions) => s.messages(principal, 'x', {}),
    ]) {
      expect((await refusalOf(call(serviceWith({ get })))).status).toBe(400);
    }
    expect(get).not.toHaveBeenCalled();
  });

  it('turns a store that cannot be reached into a 503, never a 500', async () => {
    const service = serviceWith({ get: jest.fn().mockRejectedValue(new Error('ECONNREFUSED')) });
    expect((await refusalOf(service.retrieve(principal, id))).status).toBe(503);
  });

  it('pages as OpenAI does: first_id, last_id, has_more; an unknown `after` is a 400 naming it', async () => {
    const page = jest
      .fn()
      .mockResolvedValueOnce({ items: [record], hasMore: true })
      .mockResolvedValueOnce({ items: [], hasMore: false })
      .mockResolvedValueOnce(null);
    const service = serviceWith({ page });
    expect(await service.list(principal, { limit: 1 })).toEqual({
      object: 'list',
      data: [{ ...completion, metadata: { a: 'b' } }],
      first_id: id,
      last_id: id,
      has_more: true,
    });
    expect(page).toHaveBeenCalledWith(principal.keyId, {
      after: undefined,
      limit: 1,
      order: 'asc',
      model: undefined,
      metadata: undefined,
    });
    expect(await service.list(principal, {})).toEqual({
      object: 'list',
      data: [],
      first_id: null,
      last_id: null,
      has_more: false,
    });
    expect(page).toHaveBeenLastCalledWith(
      principal.keyId,
      expect.objectContaining({ limit: 20, order: 'asc' }),
    );
    const error = await refusalOf(service.list(principal, { after: 'chatcmpl-gone0000' }));
    expect(error.status).toBe(400);
    expect(error.param).toBe('after');
  });

  it('reads a message `after` as a position of the completion’s messages, refusing another completion’s', async () => {
    const messages = jest.fn().mockResolvedValue({ items: [], hasMore: false });
    const service = serviceWith({ messages });
    await service.messages(principal, id, { after: `${id}-3`, order: 'desc', limit: 5 });
    expect(messages).toHaveBeenCalledWith(principal.keyId, id, { afterIndex: 3, limit: 5, order: 'desc' });
    expect((await refusalOf(service.messages(principal, id, { after: 'chatcmpl-other000-3' }))).param).toBe(
      'after',
    );
    messages.mockResolvedValueOnce(null);
    expect((await refusalOf(service.messages(principal, id, {}))).status).toBe(404);
  });

  it('clears metadata on null, and deletes with OpenAI’s deleted object', async () => {
    const updateMetadata = jest.fn().mockResolvedValue({ ...record, metadata: {} });
    const del = jest.fn().mockResolvedValueOnce(true).mockResolvedValueOnce(false);
    const service = serviceWith({ updateMetadata, delete: del });
    expect((await service.update(principal, id, null)).metadata).toEqual({});
    expect(updateMetadata).toHaveBeenCalledWith(principal.keyId, id, {});
    expect(await service.delete(principal, id)).toEqual({
      id,
      object: 'chat.completion.deleted',
      deleted: true,
    });
    expect((await refusalOf(service.delete(principal, id))).status).toBe(404);
  });

  it('logs a failed save instead of failing the request that asked for it', async () => {
    const save = jest.fn().mockRejectedValue(new Error('OOM command not allowed'));
    const service = serviceWith({ save });
    await expect(
      service.save(
        {
          principal,
          createdMs: 1,
          request: { messages: [{ role: 'user', content: 'x' }] },
        },
        completion,
      ),
    ).resolves.toBeUndefined();
    expect(save).toHaveBeenCalledWith(
      principal.keyId,
      expect.objectContaining({ id, model: 'sim-chat', metadata: {} }),
    );
  });
});
