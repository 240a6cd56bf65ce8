import { useEffect, useRef, useState } from 'preact/hooks';
import { ErrorNotice, NeedsCredential } from '../components/error-notice';
import { ModelSelect } from '../components/model-select';
import { RequestSnippets } from '../components/request-snippets';
import { describeError } from '../lib/api.client';
import {
  runChatStream,
  streamingBody,
  type ChatMessage,
  type ChatRequest,
  type ChatStreamResult,
} from '../lib/chat-stream.runner';
import { useModels } from '../lib/models.hook';

interface Props {
  apiKey: string;
}

interface Turn {
  role: 'user' | 'assistant';
  /** One text per choice; a user turn has one. */
  texts: string[];
  /** An answer cut short by Stop. */
  stopped?: boolean;
}

/** Parses an optional number field; empty means "not sent". */
function numberOrUndefined(text: string): number | undefined {
  if (text.trim() === '') return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

export function ChatView({ apiKey }: Props) {
  const models = useModels(apiKey, 'chat');
  const [model, setModel] = useState('');
  const [system, setSystem] = useState('');
  const [temperature, setTemperature] = useState('');
  const [maxTokens, setMaxTokens] = useState('');
  const [n, setN] = useState('1');
  const [message, setMessage] = useState('');
  const [turns, setTurns] = useState<Turn[]>([]);
  const [streaming, setStreaming] = useState(false);
  const [result, setResult] = useState<ChatStreamResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const controller = useRef<AbortController | null>(null);

  useEffect(() => {
    if (!models.models.includes(model)) setModel(models.models[0] ?? '');
  }, [models.models]);
  // Leaving the view ends a stream that is still running.
  useEffect(() => () => controller.current?.abort(), []);

  /** The request the form describes, with `pending` as the next user message. */
  const requestFor = (pending: string): ChatRequest => {
    const messages: ChatMessage[] = [];
    if (system.trim()) messages.push({ role: 'system', content: system });
    for (const turn of turns) messages.push({ role: turn.role, content: turn.texts[0] ?? '' });
    messages.push({ role: 'user', content: pending });
    const request: ChatRequest = { model, messages };
    const t = numberOrUndefined(temperature);
    const max = numberOrUndefined(maxTokens);
    const choices = numberOrUndefined(n);
    if (t !== undefined) request.temperature = t;
    if (max !== undefined) request.max_tokens = max;
    if (choices !== undefined && choices !== 1) request.n = choices;
    return request;
  };

  const sendMessage = async () => {
    const text = message.trim();
    if (!text || streaming || !apiKey) return;
    const request = requestFor(text);
    const abort = new AbortController();
    controller.current = abort;
    const choices = request.n ?? 1;
    setTurns((t) => [
      ...t,
      { role: 'user', texts: [text] },
      { role: 'assistant', texts: Array.from({ length: choices }, () => '') },
    ]);
    setMessage('');
    setError(null);
    setResult(null);
    setStreaming(true);
    const appendDelta = (choice: number, delta: string) =>
      setTurns((t) => {
        const last = t[t.length - 1];
        if (!last || last.role !== 'assistant') return t;
        const texts = [...last.texts];
        texts[choice] = (texts[choice] ?? '') + delta;
        return [...t.slice(0, -1), { ...last, texts }];
      });
    try {
      const outcome = await runChatStream(apiKey, request, abort.signal, appendDelta);
      if (outcome.outcome === 'stopped') {
        setTurns((t) => t.map((turn, i) => (i === t.length - 1 ? { ...turn, stopped: true } : turn)));
      }
      setResult(outcome);
    } catch (e) {
      setError(describeError(e));
      // Nothing answered: the failed exchange is not part of the conversation.
      setTurns((t) => {
        const last = t[t.length - 1];
        return last?.role === 'assistant' && last.texts.every((s) => s === '') ? t.slice(0, -2) : t;
      });
      setMessage((m) => m || text);
    } finally {
      controller.current = null;
      setStreaming(false);
    }
  };

  if (!apiKey) return <NeedsCredential what="API key" />;

  return (
    <section class="view chat" aria-labelledby="chat-title">
      <h1 id="chat-title">Chat playground</h1>
      <ErrorNotice error={models.error} />
      <div class="chat-layout">
        <form
          class="panel settings"
          aria-label="Chat settings"
          onSubmit={(e) => {
            e.preventDefault();
          }}
        >
          <ModelSelect id="chat-model" state={models} value={model} onChange={setModel} />
          <div class="field">
            <label for="chat-system">System prompt</label>
            <textarea
              id="chat-system"
              rows={3}
              value={system}
              onInput={(e) => setSystem(e.currentTarget.value)}
            />
          </div>
          <div class="field-row">
            <div class="field">
              <label for="chat-temperature">Temperature</label>
              <input
                id="chat-temperature"
                type="number"
                min={0}
                max={2}
                step={0.1}
                placeholder="default"
                value={temperature}
                onInput={(e) => setTemperature(e.currentTarget.value)}
              />
            </div>
            <div class="field">
              <label for="chat-max-tokens">Max tokens</label>
              <input
                id="chat-max-tokens"
                type="number"
                min={1}
                placeholder="default"
                value={maxTokens}
                onInput={(e) => setMaxTokens(e.currentTarget.value)}
              />
            </div>
            <div class="field">
              <label for="chat-n">n</label>
              <input
                id="chat-n"
                type="number"
                min={1}
                max={10}
                value={n}
                onInput={(e) => setN(e.currentTarget.value)}
              />
            </div>
          </div>
          <button
            type="button"
            class="quiet"
            onClick={() => setTurns([])}
            disabled={streaming || turns.length === 0}
          >
            New conversation
          </button>
        </form>
        <div class="conversation-column">
          <div class="conversation" role="log" aria-label="Conversation">
            {turns.length === 0 && <p class="placeholder">Messages and streamed answers appear here.</p>}
            {turns.map((turn, i) => (
              <div key={i} class={`turn ${turn.role}`}>
                {turn.texts.length > 1 ? (
                  <div class="choices">
                    {turn.texts.map((text, c) => (
                      <div key={c} class="choice" aria-label={`Choice ${c + 1}`}>
                        <span class="choice-label">Choice {c + 1}</span>
                        <p class="message-text">{text}</p>
                      </div>
                    ))}
                  </div>
                ) : (
                  <p class="message-text">{turn.texts[0]}</p>
                )}
                {turn.stopped && <span class="stopped-tag">stopped</span>}
              </div>
            ))}
            {streaming && <span class="typing" aria-hidden="true" />}
          </div>
          <Stats result={result} streaming={streaming} />
          <ErrorNotice error={error} />
          <form
            class="composer"
            onSubmit={(e) => {
              e.preventDefault();
              void sendMessage();
            }}
          >
            <label for="chat-message" class="visually-hidden">
              Message
            </label>
            <textarea
              id="chat-message"
              rows={2}
              placeholder="Message (Enter sends, Shift+Enter for a new line)"
              value={message}
              onInput={(e) => setMessage(e.currentTarget.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                  e.preventDefault();
                  void sendMessage();
                }
              }}
            />
            <div class="button-row">
              <button type="submit" disabled={streaming || !model || message.trim() === ''}>
                Send
              </button>
              <button
                type="button"
                class="danger"
                disabled={!streaming}
                onClick={() => controller.current?.abort()}
              >
                Stop
              </button>
            </div>
          </form>
          <RequestSnippets
            operation="chat"
            body={() => streamingBody(requestFor(message.trim() || 'Hello!'))}
          />
        </div>
      </div>
    </section>
  );
}

function Stats({ result, streaming }: { result: ChatStreamResult | null; streaming: boolean }) {
  if (streaming) {
    return (
      <p class="stats" role="status">
        Streaming…
      </p>
    );
  }
  if (!result) return null;
  const fmt = (value: number | null, digits: number, unit: string) =>
    value === null ? '—' : `${value.toFixed(digits)} ${unit}`;
  return (
    <dl class="stats" role="status" aria-label="Stream statistics">
      <div>
        <dt>Outcome</dt>
        <dd>
          {result.outcome === 'stopped'
            ? 'stopped'
            : result.finishReasons.filter(Boolean).join(', ') || 'done'}
        </dd>
      </div>
      <div>
        <dt>Time to first token</dt>
        <dd>{fmt(result.ttftMs, 0, 'ms')}</dd>
      </div>
      <div>
        <dt>Tokens/s</dt>
        <dd>{fmt(result.tokensPerSecond, 1, 'tok/s')}</dd>
      </div>
      <div>
        <dt>Usage</dt>
        <dd>
          {result.usage
            ? `${result.usage.prompt_tokens} prompt + ${result.usage.completion_tokens} completion = ${result.usage.total_tokens}`
            : '—'}
        </dd>
      </div>
    </dl>
  );
}
