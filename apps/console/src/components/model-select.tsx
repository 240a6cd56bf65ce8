import type { ModelsState } from '../lib/models.hook';

interface Props {
  id: string;
  state: ModelsState;
  value: string;
  onChange: (value: string) => void;
}

/** The combobox "Model", filled from `/v1/models`. */
export function ModelSelect({ id, state, value, onChange }: Props) {
  const { models, loading } = state;
  return (
    <div class="field">
      <label for={id}>Model</label>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {models.length === 0 && <option value="">{loading ? 'Loading…' : 'No models'}</option>}
        {models.map((m) => (
          <option key={m} value={m}>
            {m}
          </option>
        ))}
      </select>
    </div>
  );
}
