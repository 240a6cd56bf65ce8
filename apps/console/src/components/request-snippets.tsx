import { useState } from 'preact/hooks';
import { curlSnippet, sdkSnippet, type SnippetOperation } from '../lib/request.snippets';
import { CopyButton } from './copy-button';

interface Props {
  operation: SnippetOperation;
  body: () => object | null;
}

/** "Copy as curl" / "Copy as openai SDK code" for the request the form would send; shown as well as copied. */
export function RequestSnippets({ operation, body }: Props) {
  const [shown, setShown] = useState<'curl' | 'sdk' | null>(null);
  const snippet = (kind: 'curl' | 'sdk') => {
    const request = body() ?? {};
    return kind === 'curl'
      ? curlSnippet(location.origin, operation, request)
      : sdkSnippet(location.origin, operation, request);
  };
  const copyAndShow = (kind: 'curl' | 'sdk') => () => {
    setShown(kind);
    return snippet(kind);
  };
  return (
    <div class="snippets">
      <div class="button-row">
        <CopyButton label="Copy as curl" text={copyAndShow('curl')} />
        <CopyButton label="Copy as openai SDK code" text={copyAndShow('sdk')} />
      </div>
      {shown && (
        <pre class="snippet" aria-label={shown === 'curl' ? 'curl command' : 'openai SDK code'} tabIndex={0}>
          {snippet(shown)}
        </pre>
      )}
    </div>
  );
}
