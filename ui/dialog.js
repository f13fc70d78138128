// dialog.js - the confirmation asked before an action (cancel, revoke, a
// new limit): an in-page <dialog> rather than window.confirm, so that it can
// say what will happen in a few lines, and so that a test can read and
// answer it like a person would.
import { h } from './lib.js';

// Resolves true when the person confirms, false when they decline (the
// button, Escape, or a click outside the box).
export function confirmAction({ title, lines, confirm, danger = false }) {
  return new Promise((resolve) => {
    const dlg = h('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-title', 'data-confirm': 'open' });
    const done = (ok) => {
      if (!dlg.open) return;
      dlg.close();
      dlg.remove();
      resolve(ok);
    };
    dlg.append(
      h('h2', { id: 'confirm-title' }, title),
      ...lines.filter(Boolean).map((l) => h('p', {}, l)),
      h('div', { class: 'confirm-buttons' },
        h('button', { type: 'button', class: 'decline', onclick: () => done(false) }, 'Keep as is'),
        h('button', { type: 'button', class: `accept${danger ? ' danger' : ''}`, onclick: () => done(true) }, confirm)));
    dlg.addEventListener('cancel', (ev) => { ev.preventDefault(); done(false); });
    dlg.addEventListener('click', (ev) => { if (ev.target === dlg) done(false); });
    document.body.append(dlg);
    dlg.showModal();
    dlg.querySelector('.decline').focus();
  });
}
