import { LedgerError, NO_INTENT } from '../../shared/errors/LedgerError.js';

/** Every review change carries a note saying why (resolving above all); an empty or blank note is refused. */
export class NoteRequiredError extends LedgerError {
  readonly code = 'NOTE_REQUIRED';
  override readonly name = 'NoteRequiredError';

  constructor(action: string) {
    super(`a note is required to ${action} (say what was decided and why)`, NO_INTENT);
  }
}
