import { useEffect, useState } from 'preact/hooks';
import { describeError, requestJson } from './api.client';

interface ModelObject {
  id: string;
  type?: string;
}

/** The `type` of `/v1/models` entries (the wire contract's values). */
const MODEL_TYPES = {
  chat: 'chat/compilations',
  image: 'images/generations',
  embedding: 'embeddings',
} as const;

export interface ModelsState {
  models: string[];
  error: string | null;
  loading: boolean;
}

/**
 * The models of one type the API key may use (`GET /v1/models`), fetched again when the key changes —
 * a moment after the last keystroke, so typing a key is not a request per character.
 */
export function useModels(apiKey: string, type: keyof typeof MODEL_TYPES): ModelsState {
  const [state, setState] = useState<ModelsState>({ models: [], error: null, loading: false });
  useEffect(() => {
    if (!apiKey) {
      setState({ models: [], error: null, loading: false });
      return;
    }
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    const timer = setTimeout(() => {
      requestJson<{ data: ModelObject[] }>('/v1/models', { token: apiKey, signal: controller.signal }).then(
        (list) =>
          setState({
            models: list.data.filter((m) => m.type === MODEL_TYPES[type]).map((m) => m.id),
            error: null,
            loading: false,
          }),
        (error: unknown) => {
          if (!controller.signal.aborted)
            setState({ models: [], error: describeError(error), loading: false });
        },
      );
    }, 250);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [apiKey, type]);
  return state;
}
