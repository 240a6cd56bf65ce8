/**
 * Size bounds of a chat request that an operator configures (the gateway's `CHAT_MAX_CONTENT_PARTS`,
 * `CHAT_MAX_TEXT_CHARS`, `CHAT_MAX_IMAGE_PARTS` and `CHAT_MAX_IMAGE_BYTES`). They are checked on the plain
 * body before anything transforms or validates it, so a body made of many small elements is refused at the
 * cost of reading a few lengths.
 */
export interface RequestSizeLimits {
  /** Content parts of one message. */
  contentParts: number;
  /** Characters of text across every message's content (string content and text parts). */
  textChars: number;
  /** Image parts across every message. */
  imageParts: number;
  /** Bytes of image URLs across every message (a `data:` URL counts its whole text). */
  imageBytes: number;
}

/**
 * The gateway's defaults. The text bound lets the default 10 MiB body carry ~9.5 MB of prose (a prompt for
 * a large-context model) while a raised `BODY_LIMIT_BYTES` does not raise the text a request may carry.
 */
export const REQUEST_SIZE_DEFAULTS: Readonly<RequestSizeLimits> = {
  contentParts: 256,
  textChars: 10_000_000,
  imageParts: 256,
  imageBytes: 10 * 1024 * 1024,
};

/**
 * The largest values the configuration accepts. A worker validates jobs against these: a job was already
 * bounded by its gateway's configuration, and the worker has no view of it, so it re-checks only that no
 * gateway configuration could have let the job through.
 */
export const REQUEST_SIZE_CEILINGS: Readonly<RequestSizeLimits> = {
  contentParts: 4096,
  textChars: 100_000_000,
  imageParts: 65_536,
  imageBytes: 1024 * 1024 * 1024,
};
