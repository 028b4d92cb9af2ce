// Errors shown where they belong: the API's message beside the control of
// the field it names, else in the form's own alert line.
import { ApiError } from './api.js';

// clearErrors empties every error slot inside root.
export function clearErrors(root) {
  for (const el of root.querySelectorAll('.field-error')) el.textContent = '';
  for (const el of root.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}

// showError puts err's message beside the control fields maps its field
// to (an API field name → a control id), or into the slot fallback (an
// element id). It returns the id of the control that got it, or ''.
export function showError(root, err, fields, fallback) {
  const msg = err instanceof ApiError ? err.message : String(err?.message || err);
  const f = err instanceof ApiError ? err.field : '';
  const id = f ? (typeof fields === 'function' ? fields(f) : fields[f]) : undefined;
  const ctl = id && root.querySelector('#' + CSS.escape(id));
  if (ctl) {
    const slot = root.querySelector('#err-' + CSS.escape(id));
    if (slot) slot.textContent = msg;
    ctl.setAttribute('aria-invalid', 'true');
    return id;
  }
  const box = root.querySelector('#' + CSS.escape(fallback));
  if (box) box.textContent = msg;
  return '';
}
