import { useState } from 'preact/hooks';
import { CopyButton } from '../components/copy-button';
import { ErrorNotice, NeedsCredential } from '../components/error-notice';
import { requestJson } from '../lib/api.client';
import { keyStatusOf, type ApiKeyView, type CreatedKey, type TeamView } from '../lib/admin.types';
import type { AdminActor } from '../lib/admin-actor.hook';
import { useAdminLists } from '../lib/admin-lists.hook';
import { LimitFields } from '../components/limit-fields';
import { budgetText, knownCurrency } from '../lib/spend.summary';
import {
  createBody,
  EMPTY_SETTINGS,
  limitsOf,
  settingsOf,
  updateBody,
  type KeySettings,
} from '../lib/key-settings.form';

interface Props {
  adminToken: string;
  /** Who the token is: a team's token manages its team's keys only, and cannot move them out. */
  actor: AdminActor;
  /** Shown: the list is read again each time the view is opened. */
  active: boolean;
  onUseKey: (secret: string) => void;
}

export function KeysView({ adminToken, actor, active, onUseKey }: Props) {
  const [keys, setKeys] = useState<ApiKeyView[]>([]);
  const [teams, setTeams] = useState<TeamView[]>([]);
  const [name, setName] = useState('');
  const [settings, setSettings] = useState<KeySettings>(EMPTY_SETTINGS);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const [editing, setEditing] = useState<{ id: string; before: KeySettings; settings: KeySettings } | null>(
    null,
  );
  const [confirming, setConfirming] = useState<string | null>(null);

  const call = async <T,>(path: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', body?: unknown) =>
    requestJson<T>(path, { token: adminToken, method, body });

  const { error, act } = useAdminLists(
    async () => {
      const list = await call<{ data: ApiKeyView[] }>('/admin/keys', 'GET');
      return { keys: list.data, teams: await teamsFor(actor, adminToken) };
    },
    (lists) => {
      setKeys(lists.keys.sort((a, b) => b.created_at - a.created_at));
      setTeams(lists.teams);
    },
    { adminToken, active, actor },
  );

  const create = () =>
    act(async () => {
      const key = await call<CreatedKey>('/admin/keys', 'POST', createBody(name, settings));
      setCreated(key);
      setName('');
      setSettings(EMPTY_SETTINGS);
    });

  if (!adminToken) return <NeedsCredential what="Admin token" />;

  const currency = knownCurrency(
    null,
    [...teams, ...keys].map((holder) => holder.budget),
  );
  const teamName = (id: string | null) =>
    id === null ? 'none' : (teams.find((t) => t.id === id)?.name ?? id);
  const teamFields = (idPrefix: string, value: string, onChange: (team: string) => void) => (
    <div class="field">
      <label for={`${idPrefix}-team`}>Team</label>
      {actor.kind === 'team' ? (
        // A team's token creates its keys in its team, and may not move them out.
        <input id={`${idPrefix}-team`} type="text" readOnly value={teamName(actor.teamId)} />
      ) : (
        <select id={`${idPrefix}-team`} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
          <option value="">no team</option>
          {teams.map((team) => (
            <option key={team.id} value={team.id}>
              {team.name}
            </option>
          ))}
          {value !== '' && !teams.some((team) => team.id === value) && <option value={value}>{value}</option>}
        </select>
      )}
    </div>
  );

  return (
    <section class="view" aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <form
        class="panel"
        aria-label="New key"
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <h2>New key</h2>
        <div class="field">
          <label for="key-name">Name</label>
          <input
            id="key-name"
            type="text"
            maxLength={128}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </div>
        <div class="field-row">
          {teamFields('new', settings.team, (team) => setSettings({ ...settings, team }))}
          <ExpiryField
            idPrefix="new"
            value={settings.expires}
            onChange={(expires) => setSettings({ ...settings, expires })}
          />
        </div>
        <LimitFields
          idPrefix="new"
          settings={{
            ...settings,
            budget: { ...settings.budget, currency: settings.budget.currency || currency },
          }}
          onChange={setSettings}
        />
        <div class="button-row">
          <button type="submit" disabled={name.trim() === ''}>
            Create key
          </button>
        </div>
      </form>
      {created && (
        <div class="panel secret" role="status" aria-label="New key secret">
          <p>
            Key <strong>{created.name}</strong> created. Copy its secret now: it is shown this once and never
            again.
          </p>
          <label for="created-secret">Secret of {created.name}</label>
          <input
            id="created-secret"
            type="text"
            readOnly
            value={created.key}
            onFocus={(e) => e.currentTarget.select()}
          />
          <div class="button-row">
            <CopyButton label="Copy secret" text={() => created.key} />
            <button type="button" class="secondary" onClick={() => onUseKey(created.key)}>
              Use in playground
            </button>
            <button type="button" class="quiet" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <ErrorNotice error={error} />
      <div class="table-wrap">
        <table>
          <caption>Keys ({keys.length})</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key</th>
              <th scope="col">Models</th>
              <th scope="col">Limits</th>
              <th scope="col">Priority</th>
              <th scope="col">Team</th>
              <th scope="col">Budget</th>
              <th scope="col">Status</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {keys.map((key) => {
              const status = keyStatusOf(key);
              return (
                <tr key={key.id}>
                  <th scope="row">{key.name}</th>
                  <td>
                    <code>{key.prefix}…</code>
                    <div class="sub">{key.id}</div>
                  </td>
                  <td>{key.models ? key.models.join(', ') : 'all'}</td>
                  <td>{limitsOf(key)}</td>
                  <td>{key.priority}</td>
                  <td>{teamName(key.team_id)}</td>
                  <td>{budgetText(key.budget)}</td>
                  <td>
                    <span class={`badge ${status}`}>{status}</span>
                  </td>
                  <td class="actions">
                    {status !== 'revoked' && (
                      <>
                        <button
                          type="button"
                          class="quiet"
                          onClick={() =>
                            setEditing({
                              id: key.id,
                              before: settingsOf(key, currency),
                              settings: settingsOf(key, currency),
                            })
                          }
                        >
                          Edit
                        </button>
                        <button
                          type="button"
                          class="quiet"
                          onClick={() =>
                            void act(() =>
                              call(`/admin/keys/${key.id}`, 'PATCH', { disabled: !key.disabled }),
                            )
                          }
                        >
                          {key.disabled ? 'Enable' : 'Disable'}
                        </button>
                        {confirming === key.id ? (
                          <>
                            <button
                              type="button"
                              class="danger"
                              onClick={() => {
                                setConfirming(null);
                                void act(() => call(`/admin/keys/${key.id}`, 'DELETE'));
                              }}
                            >
                              Confirm revoke
                            </button>
                            <button type="button" class="quiet" onClick={() => setConfirming(null)}>
                              Cancel
                            </button>
                          </>
                        ) : (
                          <button
                            type="button"
                            class="quiet danger-text"
                            onClick={() => setConfirming(key.id)}
                          >
                            Revoke
                          </button>
                        )}
                      </>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {editing && (
        <form
          class="panel"
          aria-label="Edit key"
          onSubmit={(e) => {
            e.preventDefault();
            const { id, before, settings: after } = editing;
            setEditing(null);
            void act(() => call(`/admin/keys/${id}`, 'PATCH', updateBody(before, after)));
          }}
        >
          <h2>Edit {keys.find((k) => k.id === editing.id)?.name ?? editing.id}</h2>
          <div class="field-row">
            {teamFields('edit', editing.settings.team, (team) =>
              setEditing({ ...editing, settings: { ...editing.settings, team } }),
            )}
            <ExpiryField
              idPrefix="edit"
              value={editing.settings.expires}
              onChange={(expires) => setEditing({ ...editing, settings: { ...editing.settings, expires } })}
            />
          </div>
          <LimitFields
            idPrefix="edit"
            settings={editing.settings}
            onChange={(s) => setEditing({ ...editing, settings: s })}
          />
          <div class="button-row">
            <button type="submit">Save limits</button>
            <button type="button" class="quiet" onClick={() => setEditing(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </section>
  );
}

/** The teams a key may be put in: every team for the operator, its own for a team's token. */
async function teamsFor(actor: AdminActor, token: string): Promise<TeamView[]> {
  if (actor.kind === 'operator') {
    return (await requestJson<{ data: TeamView[] }>('/admin/teams', { token })).data;
  }
  if (actor.kind === 'team' && actor.teamId !== null) {
    return [await requestJson<TeamView>(`/admin/teams/${actor.teamId}`, { token })];
  }
  return [];
}

function ExpiryField({
  idPrefix,
  value,
  onChange,
}: {
  idPrefix: string;
  value: string;
  onChange: (v: string) => void;
}) {
  return (
    <div class="field">
      <label for={`${idPrefix}-expires`}>Expires after (UTC)</label>
      <input
        id={`${idPrefix}-expires`}
        type="date"
        value={value}
        onChange={(e) => onChange(e.currentTarget.value)}
      />
    </div>
  );
}
