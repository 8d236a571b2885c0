import { useId, useState, type FormEvent } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { useNamespaces } from '../api/queries';
import { isNamespaceName, offeredNamespaces, sectionOf } from '../lib/namespace';
import { NamespaceIcon } from './Icons';
import './NamespaceSelect.css';

/**
 * Namespace picker: a text field with suggestions from /api/namespaces. When
 * namespaces cannot be listed (403), free entry still works.
 */
export function NamespaceSelect({ current, routeNs }: { current: string; routeNs: string | undefined }) {
  const { data, error } = useNamespaces();
  const [value, setValue] = useState(current);
  const [invalid, setInvalid] = useState(false);
  const navigate = useNavigate();
  const location = useLocation();
  const listId = useId();
  const hintId = useId();

  // A new current namespace replaces what was typed (adjusted while rendering, not in an effect).
  const [shown, setShown] = useState(current);
  if (shown !== current) {
    setShown(current);
    setValue(current);
  }

  const go = (ns: string) => {
    const v = ns.trim();
    if (!isNamespaceName(v)) {
      setInvalid(true);
      return;
    }
    setInvalid(false);
    if (v !== routeNs) navigate(`/namespaces/${v}/${sectionOf(location.pathname)}`);
  };

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    go(value);
  };

  const names = offeredNamespaces(data);
  return (
    <form className="ns-select" onSubmit={onSubmit} role="search" aria-label="Namespace">
      <label htmlFor={`${listId}-input`} className="ns-label">
        <NamespaceIcon />
        <span>Namespace</span>
      </label>
      <input
        id={`${listId}-input`}
        className="input"
        list={names.length ? listId : undefined}
        value={value}
        spellCheck={false}
        autoComplete="off"
        aria-invalid={invalid || undefined}
        aria-describedby={hintId}
        onChange={(e) => {
          setValue(e.target.value);
          if (names.includes(e.target.value)) go(e.target.value);
        }}
        onBlur={() => value && value !== current && go(value)}
        placeholder="namespace"
        size={14}
      />
      {names.length > 0 && (
        <datalist id={listId}>
          {names.map((n) => (
            <option key={n} value={n} />
          ))}
        </datalist>
      )}
      <span id={hintId} className={invalid ? 'ns-hint error' : 'visually-hidden'}>
        {invalid
          ? 'Not a valid namespace name.'
          : error
            ? 'Namespaces cannot be listed with your access; type a namespace name and press Enter.'
            : 'Type or pick a namespace and press Enter.'}
      </span>
    </form>
  );
}
