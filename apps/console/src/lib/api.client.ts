/** An OpenAI-style error answer, kept whole so the page can show status, code and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null,
    readonly type: string | null,
    /** The request field the error names, if any. */
    readonly param: string | null = null,
  ) {
    super(message);
  }

  /** `401 invalid_api_key: Incorrect API key provided…` */
  describe(): string {
    const what = this.code ?? this.type;
    return `${this.status > 0 ? `${this.status} ` : ''}${what ? `${what}: ` : ''}${this.message}`;
  }
}

interface ErrorBody {
  error?: { message?: unknown; code?: unknown; type?: unknown; param?: unknown };
}

const stringOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** The error inside an OpenAI-style body (`{"error":{…}}`), or null when the value is not one. */
export function errorOf(status: number, value: unknown): ApiError | null {
  const error = (value as ErrorBody | null)?.error;
  if (typeof error !== 'object' || error === null) return null;
  const message = stringOrNull(error.message) ?? 'The gateway answered with an error.';
  return new ApiError(
    status,
    message,
    stringOrNull(error.code),
    stringOrNull(error.type),
    stringOrNull(error.param),
  );
}

/**
 * A gateway with an operator listener (ADMIN_PORT) serves `/admin` only there and `/v1` only on its API port:
 * the route's 404 then says which port this view needs.
 */
export function withListenerHint(path: string, error: ApiError): ApiError {
  if (error.status !== 404 || error.code !== 'unknown_url') return error;
  const hint = path.startsWith('/admin/')
    ? 'This port does not serve the admin API: the gateway serves it on its operator listener (ADMIN_PORT). Open the console there for Keys, Usage and Models.'
    : path.startsWith('/v1/')
      ? "This port is the gateway's operator listener, which does not serve the API. Open the console on the API port for Chat, Images, Embeddings and Batches."
      : null;
  return hint === null ? error : new ApiError(error.status, hint, error.code, error.type, error.param);
}

export async function errorOfResponse(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => '');
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the status line says what there is to say
  }
  const error =
    errorOf(response.status, parsed) ??
    new ApiError(response.status, text.slice(0, 200) || response.statusText, null, null);
  return response.url ? withListenerHint(new URL(response.url).pathname, error) : error;
}

export interface RequestOptions {
  /** Sent as the Bearer credential; never put into a URL. */
  token: string;
  method?: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  body?: unknown;
  /** A multipart body (an upload); the browser writes its content type with the boundary. */
  form?: FormData;
  signal?: AbortSignal;
  /** Extra request headers. */
  headers?: Record<string, string>;
}

/** A JSON call to the gateway (same origin). Non-2xx answers throw their `ApiError`. */
export async function requestJson<T>(path: string, options: RequestOptions): Promise<T> {
  const response = await send(path, options);
  if (!response.ok) throw await errorOfResponse(response);
  return (await response.json()) as T;
}

/** The raw response of a call (for streams); network failures become an `ApiError` with status 0. */
export async function send(path: string, options: RequestOptions): Promise<Response> {
  const headers: Record<string, string> = {
    ...options.headers,
    authorization: `Bearer ${options.token}`,
  };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  try {
    return await fetch(path, {
      method: options.method ?? 'GET',
      headers,
      body: options.form ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
      signal: options.signal,
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError(0, `The gateway could not be reached: ${String(error)}`, null, null);
  }
}

export function describeError(error: unknown): string {
  return error instanceof ApiError ? error.describe() : String(error);
}
