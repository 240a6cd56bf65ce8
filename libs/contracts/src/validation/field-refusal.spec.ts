import { validateImageGenerationBody } from '../dto/image-generation-request.schema';
import { textLength } from './field-refusal';

describe('textLength', () => {
  it('counts what a reader sees: a surrogate pair or a presentation selector is no character of its own', () => {
    expect(textLength('abc')).toBe(3);
    expect(textLength('😀')).toBe(1);
    expect(textLength('❤️')).toBe(1);
    expect(textLength('\ud83d')).toBe(1);
  });

  it("bounds a prompt by it: 4000 emoji are 4000 characters, as class-validator's count had it", () => {
    expect(validateImageGenerationBody({ prompt: '😀'.repeat(4000) }).prompt).toHaveLength(8000);
    expect(() => validateImageGenerationBody({ prompt: '😀'.repeat(4001) })).toThrow(
      "Invalid 'prompt': expected a prompt of at most 4000 characters, got a string of length 8002.",
    );
    // Refused for `n`, not for a prompt the fast check counts otherwise.
    expect(() => validateImageGenerationBody({ prompt: '😀'.repeat(3000), n: 0 })).toThrow("Invalid 'n'");
  });
});
