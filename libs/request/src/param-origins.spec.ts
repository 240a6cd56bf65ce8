import { GatewayError } from '@mgw/contracts';
import { ParamOrigins } from './param-origins';

describe('ParamOrigins', () => {
  const messages = new ParamOrigins()
    .set('messages[0]', 'system')
    .set('messages[1]', 'messages.0')
    .set('messages[2].content[1].image_url.url', 'messages.1.content.3.source.url');
  const responses = new ParamOrigins()
    .set('messages', 'input', 'drop')
    .set('tools[1].function', 'tools[3]')
    .set('tools[1]', 'tools[3]')
    .set('response_format.json_schema', 'text.format')
    .set('response_format', 'text.format');

  it('names a path by its nearest origin, keeping or dropping what lies under it', () => {
    expect(messages.param('messages[1].content')).toBe('messages.0.content');
    expect(messages.param('messages[2].content[1].image_url.url')).toBe('messages.1.content.3.source.url');
    expect(messages.param('messages')).toBe('messages');
    expect(responses.param('messages[4].content[2]')).toBe('input');
    expect(responses.param('tools[1].function.parameters')).toBe('tools[3].parameters');
    expect(responses.param('response_format.json_schema.schema')).toBe('text.format.schema');
    expect(responses.param('temperature')).toBe('temperature');
    expect(ParamOrigins.SAME.param('messages[1]')).toBe('messages[1]');
  });

  it("tells a refusal in the client's words: a path wherever it is quoted, a plain word only quoted", () => {
    const image = GatewayError.invalidRequest(
      'The model `m` accepts text only; messages[1].content has an image part.',
      'messages[1].content',
      'unsupported_content',
    );
    expect(messages.told(image)).toMatchObject({
      status: 400,
      code: 'unsupported_content',
      param: 'messages.0.content',
      message: 'The model `m` accepts text only; messages.0.content has an image part.',
    });
    const context = GatewayError.contextLengthExceeded(10, 20, false);
    expect(responses.told(context)).toMatchObject({ param: 'input', message: context.message });
    const unsupported = GatewayError.invalidRequest(
      'The model `m` does not support `response_format`.',
      'response_format',
      'unsupported_parameter',
    );
    expect(responses.told(unsupported).message).toBe('The model `m` does not support `text.format`.');
    const unrelated = GatewayError.invalidRequest('no such model', 'model');
    expect(responses.told(unrelated)).toBe(unrelated);
    expect(ParamOrigins.SAME.told(image)).toBe(image);
  });

  it('extends a base without changing it', () => {
    const extended = new ParamOrigins(responses).set('messages[2].content[0].image_url.url', 'input[1].id');
    expect(extended.param('messages[2].content[0].image_url.url')).toBe('input[1].id');
    expect(responses.param('messages[2].content[0].image_url.url')).toBe('input');
  });
});
