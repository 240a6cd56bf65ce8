import { useState } from 'preact/hooks';
import { CopyButton } from '../components/copy-button';
import { ErrorNotice, NeedsCredential } from '../components/error-notice';
import { LimitFields } from '../components/limit-fields';
import { TeamSpend } from '../components/team-spend';
import type { AdminActor } from '../lib/admin-actor.hook';
import { useAdminLists } from '../lib/admin-lists.hook';
import type { ApiKeyView, CreatedTeamToken, TeamView } from '../lib/admin.types';
import { requestJson } from '../lib/api.client';
import { limitsOf } from '../lib/key-settings.form';
import { budgetText, knownCurrency } from '../lib/spend.summary';
import {
  createTeamBody,
  EMPTY_TEAM,
  teamSettingsOf,
  updateTeamBody,
  type TeamSettings,
} from '../lib/team-settings.form';

interface Props {
  adminToken: string;
  /** The operator manages every team; a team's token sees its own team (and its spend) only. */
  actor: AdminActor;
  /** Shown: the list is read again each time the view is opened. */
  active: boolean;
}

export function TeamsView({ adminToken, actor, active }: Props) {
  const [teams, setTeams] = useState<TeamView[]>([]);
  const [keys, setKeys] = useState<ApiKeyView[]>([]);
  const [settings, setSettings] = useState<TeamSettings>(EMPTY_TEAM);
  const [editing, setEditing] = useState<{ id: string; before: TeamSettings; settings: TeamSettings } | null>(
    null,
  );
  const [confirming, setConfirming] = useState<string | null>(null);
  const [token, setToken] = useState<CreatedTeamToken | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const operator = actor.kind !== 'team';

  const call = async <T,>(path: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', body?: unknown) =>
    requestJson<T>(path, { token: adminToken, method, body });

  const { error, act } = useAdminLists(
    () =>
      Promise.all([
        actor.kind === 'team'
          ? actor.teamId === null
            ? Promise.resolve([])
            : call<TeamView>(`/admin/teams/${actor.teamId}`, 'GET').then((team) => [team])
          : call<{ data: TeamView[] }>('/admin/teams', 'GET').then((l) => l.data),
        call<{ data: ApiKeyView[] }>('/admin/keys', 'GET').then((l) => l.data),
      ]),
    ([list, keyList]) => {
      setTeams(list.sort((a, b) => a.name.localeCompare(b.name)));
      setKeys(keyList);
      // A team's own operator lands on its spend.
      if (actor.kind === 'team') setSelected(actor.teamId);
    },
    { adminToken, active, actor },
  );

  if (!adminToken) return <NeedsCredential what="Admin token" />;

  const currency = knownCurrency(
    null,
    [...teams, ...keys].map((holder) => holder.budget),
  );
  const shown = teams.find((team) => team.id === selected) ?? null;

  return (
    <section class="view" aria-labelledby="teams-title">
      <h1 id="teams-title">Teams</h1>
      {actor.kind === 'team' && (
        <p class="notice" role="note">
          This is a team's admin token: it sees its own team, its keys and its spend. Teams are created and
          changed with the operator's admin token.
        </p>
      )}
      {actor.kind === 'team' && actor.teamId === null && (
        <p class="notice">The team of this token could not be told: create a key in it under Keys first.</p>
      )}
      {operator && (
        <form
          class="panel"
          aria-label="New team"
          onSubmit={(e) => {
            e.preventDefault();
            void act(async () => {
              await call<TeamView>('/admin/teams', 'POST', createTeamBody(settings));
              setSettings(EMPTY_TEAM);
            });
          }}
        >
          <h2>New team</h2>
          <div class="field">
            <label for="team-name">Team name</label>
            <input
              id="team-name"
              type="text"
              maxLength={128}
              value={settings.name}
              onInput={(e) => setSettings({ ...settings, name: e.currentTarget.value })}
            />
          </div>
          <LimitFields
            idPrefix="new-team"
            settings={{
              ...settings,
              budget: { ...settings.budget, currency: settings.budget.currency || currency },
            }}
            onChange={setSettings}
          />
          <div class="button-row">
            <button type="submit" disabled={settings.name.trim() === ''}>
              Create team
            </button>
          </div>
        </form>
      )}
      {token && (
        <div class="panel secret" role="status" aria-label="New team admin token">
          <p>
            Admin token <strong>{token.name}</strong> of {teams.find((t) => t.id === token.team_id)?.name}{' '}
            created. Copy it now: it is shown this once and never again.
          </p>
          <label for="created-team-token">Team admin token</label>
          <input
            id="created-team-token"
            type="text"
            readOnly
            value={token.token}
            onFocus={(e) => e.currentTarget.select()}
          />
          <div class="button-row">
            <CopyButton label="Copy token" text={() => token.token} />
            <button type="button" class="quiet" onClick={() => setToken(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <ErrorNotice error={error} />
      <div class="table-wrap">
        <table>
          <caption>Teams ({teams.length})</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Models</th>
              <th scope="col">Limits</th>
              <th scope="col">Budget</th>
              <th scope="col">Priority</th>
              <th scope="col" class="num">
                Weight
              </th>
              <th scope="col" class="num">
                Keys
              </th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {teams.map((team) => (
              <tr key={team.id}>
                <th scope="row">
                  {team.name}
                  <div class="sub">{team.id}</div>
                </th>
                <td>{team.models ? team.models.join(', ') : 'all'}</td>
                <td>{limitsOf(team)}</td>
                <td>{budgetText(team.budget)}</td>
                <td>{team.priority}</td>
                <td class="num">{team.weight}</td>
                <td class="num">{team.keys}</td>
                <td class="actions">
                  <button
                    type="button"
                    class="secondary"
                    aria-pressed={selected === team.id}
                    onClick={() => setSelected(team.id)}
                  >
                    Spend
                  </button>
                  {operator && (
                    <>
                      <button
                        type="button"
                        class="quiet"
                        onClick={() =>
                          setEditing({
                            id: team.id,
                            before: teamSettingsOf(team, currency),
                            settings: teamSettingsOf(team, currency),
                          })
                        }
                      >
                        Edit
                      </button>
                      <button
                        type="button"
                        class="quiet"
                        onClick={() =>
                          void act(async () =>
                            setToken(
                              await call<CreatedTeamToken>(`/admin/teams/${team.id}/tokens`, 'POST', {}),
                            ),
                          )
                        }
                      >
                        New admin token
                      </button>
                      {confirming === team.id ? (
                        <>
                          <button
                            type="button"
                            class="danger"
                            onClick={() => {
                              setConfirming(null);
                              if (selected === team.id) setSelected(null);
                              void act(() => call(`/admin/teams/${team.id}`, 'DELETE'));
                            }}
                          >
                            Confirm delete
                          </button>
                          <button type="button" class="quiet" onClick={() => setConfirming(null)}>
                            Cancel
                          </button>
                        </>
                      ) : (
                        <button
                          type="button"
                          class="quiet danger-text"
                          onClick={() => setConfirming(team.id)}
                        >
                          Delete
                        </button>
                      )}
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {editing && operator && (
        <form
          class="panel"
          aria-label="Edit team"
          onSubmit={(e) => {
            e.preventDefault();
            const { id, before, settings: after } = editing;
            setEditing(null);
            void act(() => call(`/admin/teams/${id}`, 'PATCH', updateTeamBody(before, after)));
          }}
        >
          <h2>Edit {teams.find((t) => t.id === editing.id)?.name ?? editing.id}</h2>
          <div class="field">
            <label for="edit-team-name">Team name</label>
            <input
              id="edit-team-name"
              type="text"
              maxLength={128}
              value={editing.settings.name}
              onInput={(e) =>
                setEditing({ ...editing, settings: { ...editing.settings, name: e.currentTarget.value } })
              }
            />
          </div>
          <LimitFields
            idPrefix="edit-team"
            settings={editing.settings}
            onChange={(s) => setEditing({ ...editing, settings: s })}
          />
          <div class="button-row">
            <button type="submit">Save team</button>
            <button type="button" class="quiet" onClick={() => setEditing(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {shown && <TeamSpend adminToken={adminToken} team={shown} keys={keys} />}
    </section>
  );
}
