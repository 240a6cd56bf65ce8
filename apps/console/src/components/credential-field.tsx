import { useState } from 'preact/hooks';

interface Props {
  id: string;
  label: string;
  hint: string;
  value: string;
  onChange: (value: string) => void;
}

/**
 * A secret typed into the page. A text box (masked by CSS until "Show") rather than a password field, so
 * browsers neither offer to save it nor fill it elsewhere; `autocomplete="off"` keeps it out of form history.
 */
export function CredentialField({ id, label, hint, value, onChange }: Props) {
  const [shown, setShown] = useState(false);
  return (
    <div class="credential">
      <label for={id}>{label}</label>
      <span class="hint" id={`${id}-hint`}>
        {hint}
      </span>
      <div class="credential-row">
        <input
          id={id}
          type="text"
          class={shown ? '' : 'masked'}
          autocomplete="off"
          autocapitalize="off"
          spellcheck={false}
          aria-describedby={`${id}-hint`}
          value={value}
          onInput={(e) => onChange(e.currentTarget.value.trim())}
        />
        <button
          type="button"
          class="quiet"
          aria-pressed={shown}
          aria-label={`Show ${label}`}
          onClick={() => setShown(!shown)}
        >
          {shown ? 'Hide' : 'Show'}
        </button>
      </div>
    </div>
  );
}
