import { useState } from 'preact/hooks';

interface Props {
  label: string;
  text: () => string;
}

/** Copies `text()` to the clipboard and says so; where the clipboard is refused, the text stays selectable. */
export function CopyButton({ label, text }: Props) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = () => {
    navigator.clipboard.writeText(text()).then(
      () => setState('copied'),
      () => setState('failed'),
    );
    setTimeout(() => setState('idle'), 2000);
  };
  // The outcome is announced next to the button, so the button's name stays what it says.
  return (
    <span class="copy">
      <button type="button" class="secondary" onClick={copy}>
        {label}
      </button>
      <span class="copy-state" aria-live="polite">
        {state === 'copied' ? 'copied' : state === 'failed' ? 'select the text to copy' : ''}
      </span>
    </span>
  );
}
