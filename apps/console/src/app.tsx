import { useEffect, useState } from 'preact/hooks';
import { CredentialField } from './components/credential-field';
import { useAdminActor } from './lib/admin-actor.hook';
import { readCredential, writeCredential, type CredentialName } from './lib/session-credentials.store';
import { BatchesView } from './views/batches.view';
import { ChatView } from './views/chat.view';
import { EmbeddingsView } from './views/embeddings.view';
import { ImagesView } from './views/images.view';
import { KeysView } from './views/keys.view';
import { ModelsView } from './views/models.view';
import { TeamsView } from './views/teams.view';
import { UsageView } from './views/usage.view';

const VIEWS = [
  { id: 'chat', label: 'Chat' },
  { id: 'images', label: 'Images' },
  { id: 'embeddings', label: 'Embeddings' },
  { id: 'batches', label: 'Batches' },
  { id: 'keys', label: 'Keys' },
  { id: 'teams', label: 'Teams' },
  { id: 'usage', label: 'Usage' },
  { id: 'models', label: 'Models' },
] as const;

type ViewId = (typeof VIEWS)[number]['id'];

/** The operator's alone: a team's admin token is refused there (403), so its console does not offer them. */
const OPERATOR_ONLY: readonly ViewId[] = ['models'];

/** The view named by the URL's fragment (`#keys`); the fragment carries nothing else. */
function viewOfLocation(): ViewId {
  const id = location.hash.replace(/^#\/?/, '');
  return VIEWS.find((view) => view.id === id)?.id ?? 'chat';
}

export function App() {
  const [view, setView] = useState<ViewId>(viewOfLocation);
  const [apiKey, setApiKey] = useState(() => readCredential('apiKey'));
  const [adminToken, setAdminToken] = useState(() => readCredential('adminToken'));
  const actor = useAdminActor(adminToken);
  const offered = VIEWS.filter((v) => actor.kind !== 'team' || !OPERATOR_ONLY.includes(v.id));

  useEffect(() => {
    const follow = () => setView(viewOfLocation());
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);

  useEffect(() => {
    const label = VIEWS.find((v) => v.id === view)?.label ?? '';
    document.title = `${label} · Model Gateway console`;
  }, [view]);

  const update = (name: CredentialName, value: string) => {
    writeCredential(name, value);
    (name === 'apiKey' ? setApiKey : setAdminToken)(value);
  };

  const useKeyInPlayground = (secret: string) => {
    update('apiKey', secret);
    location.hash = '#chat';
  };

  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="top">
        <div class="brand">
          <span class="brand-mark" aria-hidden="true">
            ◆
          </span>
          Model Gateway <span class="brand-sub">console</span>
        </div>
        <form class="credentials" onSubmit={(e) => e.preventDefault()} aria-label="Credentials">
          <CredentialField
            id="api-key"
            label="API key"
            hint="for Chat, Images, Embeddings and Batches"
            value={apiKey}
            onChange={(value) => update('apiKey', value)}
          />
          <CredentialField
            id="admin-token"
            label="Admin token"
            hint={
              actor.kind === 'team' ? "a team's: its keys and spend" : 'for Keys, Teams, Usage and Models'
            }
            value={adminToken}
            onChange={(value) => update('adminToken', value)}
          />
        </form>
        <nav class="tabs" aria-label="Views">
          {offered.map((v) => (
            <a key={v.id} href={`#${v.id}`} aria-current={v.id === view ? 'page' : undefined}>
              {v.label}
            </a>
          ))}
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        {/* Views stay mounted while hidden: a conversation, a stream or generated images survive a look at Keys. */}
        <div hidden={view !== 'chat'}>
          <ChatView apiKey={apiKey} />
        </div>
        <div hidden={view !== 'images'}>
          <ImagesView apiKey={apiKey} />
        </div>
        <div hidden={view !== 'embeddings'}>
          <EmbeddingsView apiKey={apiKey} />
        </div>
        <div hidden={view !== 'batches'}>
          <BatchesView apiKey={apiKey} active={view === 'batches'} />
        </div>
        <div hidden={view !== 'keys'}>
          <KeysView
            adminToken={adminToken}
            actor={actor}
            active={view === 'keys'}
            onUseKey={useKeyInPlayground}
          />
        </div>
        <div hidden={view !== 'teams'}>
          <TeamsView adminToken={adminToken} actor={actor} active={view === 'teams'} />
        </div>
        <div hidden={view !== 'usage'}>
          <UsageView adminToken={adminToken} actor={actor} active={view === 'usage'} />
        </div>
        <div hidden={view !== 'models'}>
          {actor.kind === 'team' ? (
            <p class="notice">Models are the operator's: a team's admin token does not read them.</p>
          ) : (
            <ModelsView adminToken={adminToken} active={view === 'models'} />
          )}
        </div>
      </main>
    </>
  );
}
