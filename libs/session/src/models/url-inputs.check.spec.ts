import { type ModelEntry, type UrlInputPolicy } from '@mgw/contracts';
import { ParamOrigins, type InferenceMessage } from '@mgw/request';
import { checkUrlInputs } from './url-inputs.check';
import { refusal } from '@mgw/testing';

const model = (urlInputs?: UrlInputPolicy): ModelEntry => ({
  id: 'vision',
  type: 'chat/compilations',
  owned_by: 'model-gateway',
  created: 0,
  liveWorkers: 1,
  readyWorkers: 1,
  concurrency: 1,
  ...(urlInputs === undefined ? {} : { urlInputs }),
});

const image = (url: string) => ({ type: 'image_url', image_url: { url } });

const conversation = (...urls: string[]) =>
  [
    { role: 'system', content: 'Describe images.' },
    { role: 'user', content: 'Hello' },
    { role: 'user', content: [{ type: 'text', text: 'Look:' }, ...urls.map(image)] },
  ] as unknown as InferenceMessage[];

describe('checkUrlInputs', () => {
  it("refuses an internal URL under the default policy ('public'), naming the chat part", () => {
    const error = refusal(() =>
      checkUrlInputs(conversation('https://example.com/a.png', 'http://169.254.169.254/latest/'), model()),
    );
    expect(error.toBody()).toEqual({
      error: {
        message:
          "Invalid 'messages[2].content[2].image_url.url': its host 169.254.169.254 is a link-local address (cloud metadata lives there). Model 'vision' takes data: URLs and http(s) URLs of public hosts (its catalog's urlInputs is 'public').",
        type: 'invalid_request_error',
        param: 'messages[2].content[2].image_url.url',
        code: 'invalid_image_url',
      },
    });
    expect(error.status).toBe(400);
  });

  it('is told in the front-end’s words through its origins', () => {
    const origins = new ParamOrigins().set('messages[2].content[1].image_url.url', 'messages.1.content.1');
    const error = origins.told(
      refusal(() => checkUrlInputs(conversation('file:///etc/passwd'), model('any'))),
    );
    expect(error.param).toBe('messages.1.content.1');
    expect(error.message).toMatch(/^Invalid 'messages\.1\.content\.1': the file: scheme is not accepted/);
  });

  it("lets public and data: URLs through under 'public', private ones under 'any'", () => {
    const publicOnes = conversation('https://example.com/a.png', 'data:image/png;base64,AAAA');
    expect(() => checkUrlInputs(publicOnes, model('public'))).not.toThrow();
    expect(() => checkUrlInputs(conversation('http://10.0.0.1/x.png'), model('any'))).not.toThrow();
  });

  it("refuses a public URL under 'none', and lets data: through", () => {
    expect(
      refusal(() => checkUrlInputs(conversation('https://example.com/a.png'), model('none'))).message,
    ).toMatch(/takes no URL inputs.*urlInputs is 'none'/);
    expect(() => checkUrlInputs(conversation('data:image/png;base64,AAAA'), model('none'))).not.toThrow();
  });

  it('reads only image parts: text that looks like a URL is not a URL input', () => {
    const text = [{ role: 'user', content: 'http://127.0.0.1/' }] as unknown as InferenceMessage[];
    expect(() => checkUrlInputs(text, model('none'))).not.toThrow();
  });
});
