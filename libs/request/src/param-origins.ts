import { GatewayError } from '@mgw/contracts';

/** Whether what lies under a path keeps its own path under the client's param (`keep`) or is all of it. */
export type UnderOrigin = 'keep' | 'drop';

interface Origin {
  param: string;
  under: UnderOrigin;
}

/** Where a path may be cut into a shorter one: before a `.field` or an `[index]`. */
function parentOf(path: string): string | null {
  const cut = Math.max(path.lastIndexOf('.'), path.lastIndexOf('['));
  return cut > 0 ? path.slice(0, cut) : null;
}

/**
 * Where the parts of a neutral request (`ChatRequest`) came from in the client's body: its front-end
 * sets, once, the client's `param` of each neutral path it made (`messages[3]` came from `messages.2`,
 * `response_format` from `text.format`), and every refusal found past the front-end — a model that cannot
 * take a parameter, a prompt over its context, a URL its policy refuses, a worker's refusal — is told
 * with the client's own param by `told`. A path nobody set is the client's as it is: a Chat Completions
 * body's params are the neutral paths, so its origins are empty (`ParamOrigins.SAME`).
 */
export class ParamOrigins {
  /** The origins of a body whose params are the neutral paths themselves. */
  static readonly SAME = new ParamOrigins();

  private readonly origins: Map<string, Origin>;

  constructor(base?: ParamOrigins) {
    this.origins = new Map(base?.origins);
  }

  /** `path` came from `param`; a path under it comes from under `param` (`keep`), or from `param` itself. */
  set(path: string, param: string, under: UnderOrigin = 'keep'): this {
    this.origins.set(path, { param, under });
    return this;
  }

  /** The client's param of a neutral path: its own origin, else its nearest set parent's. */
  param(path: string): string {
    if (this.origins.size === 0) return path;
    for (let at: string | null = path; at !== null; at = parentOf(at)) {
      const origin = this.origins.get(at);
      if (origin === undefined) continue;
      return origin.under === 'keep' ? origin.param + path.slice(at.length) : origin.param;
    }
    return path;
  }

  /**
   * A refusal naming a neutral path, in the client's words: its param, and the message where it quotes the
   * param — a path (`messages[1].content has an image part`) wherever it appears, a plain word (`messages`)
   * only quoted (`'messages'`, `` `messages` ``), so that prose using the same word stays as it is.
   */
  told(error: GatewayError): GatewayError {
    const from = error.param;
    if (from === null || this.origins.size === 0) return error;
    const to = this.param(from);
    if (to === from) return error;
    const message =
      from.includes('.') || from.includes('[')
        ? error.message.split(from).join(to)
        : error.message.split(`'${from}'`).join(`'${to}'`).split(`\`${from}\``).join(`\`${to}\``);
    return new GatewayError(error.status, error.type, error.code, message, to, error.headers);
  }

  /** `told` for anything thrown: a refusal in the client's words, anything else as it is. */
  toldIfRefusal(error: unknown): unknown {
    return error instanceof GatewayError ? this.told(error) : error;
  }
}
