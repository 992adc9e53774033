// "Every X you may use" or "Only these" with a checkbox each: the consent page's pickers for
// connections and tools. "all" is kept as such (not the ids of today), so the grant follows the
// user's access as it changes, as an unscoped key does.
import { useId } from 'preact/hooks';

export type Choice = string[] | 'all';

export function isEmptyChoice(value: Choice): boolean {
  return value !== 'all' && value.length === 0;
}

export function ChoiceList(props: {
  legend: string;
  allLabel: string;
  items: { value: string; label: string; title?: string }[];
  value: Choice;
  onChange(value: Choice): void;
}) {
  const name = useId();
  const { value, onChange } = props;
  const some = value !== 'all';
  const toggle = (item: string, on: boolean) => {
    if (value === 'all') return;
    onChange(on ? [...value, item] : value.filter((x) => x !== item));
  };
  return (
    <fieldset class="field choice-list">
      <legend>{props.legend}</legend>
      <label class="check">
        <input type="radio" name={name} checked={!some} onChange={() => onChange('all')} /> {props.allLabel}
      </label>
      <label class="check">
        <input type="radio" name={name} checked={some} onChange={() => onChange([])} /> Only these:
      </label>
      {some && (
        <div class="choice-items" role="group" aria-label={`${props.legend} to allow`}>
          {props.items.length === 0 && <small class="muted">None available.</small>}
          {props.items.map((item) => (
            <label class="check" key={item.value} title={item.title}>
              <input type="checkbox" checked={value.includes(item.value)} onChange={(e) => toggle(item.value, e.currentTarget.checked)} />{' '}
              <span class="choice-label">{item.label}</span>
            </label>
          ))}
          {value.length === 0 && <small class="consent-invalid">Tick at least one, or choose “{props.allLabel}”.</small>}
        </div>
      )}
    </fieldset>
  );
}
