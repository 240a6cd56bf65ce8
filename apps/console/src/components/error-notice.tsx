interface Props {
  error: string | null;
}

/** An error the page got from the gateway, announced as it appears. */
export function ErrorNotice({ error }: Props) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error}
    </p>
  );
}

export function NeedsCredential({ what }: { what: 'API key' | 'Admin token' }) {
  return (
    <p class="notice">
      Enter the <strong>{what}</strong> above: it stays in this tab only (sessionStorage).
    </p>
  );
}
