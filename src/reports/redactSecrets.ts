/**
 * `text` with every secret of ours (a token, a password, a Basic credential) replaced by `[redacted]`, in
 * each form a partner may echo it back in:
 * - as it is;
 * - JSON-escaped, as a JSON body quotes it: `"` and `\` escaped, and also `/` written `\/` (PHP's
 *   json_encode does so by default, and a base64 token may hold a `/`) and non-ASCII characters written
 *   `\uXXXX` (PHP's default too), in either case of hex digit;
 * - percent-encoded, as in an address (a redirect's path, an echoed request line).
 * Longer forms go first, so that a secret inside another one never leaves the longer one in part. Redact
 * whole texts, before cutting them: a cut through a secret leaves a part no search for the secret finds.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  const forms = [...new Set(secrets.flatMap(formsOf))].sort((a, b) => b.length - a.length);
  let redacted = text;
  for (const form of forms) redacted = redacted.split(form).join('[redacted]');
  return redacted;
}

function formsOf(secret: string): string[] {
  if (secret === '') return [];
  const escaped = JSON.stringify(secret).slice(1, -1);
  const jsonForms = [escaped, escaped.replaceAll('/', '\\/')].flatMap((form) => [
    form,
    asciiOnly(form, (hex) => hex),
    asciiOnly(form, (hex) => hex.toUpperCase()),
  ]);
  return [secret, ...jsonForms, encodeURIComponent(secret), encodeURI(secret)];
}

/** `form` with each UTF-16 unit outside ASCII written `\uXXXX` (as JSON encoders that escape Unicode do). */
function asciiOnly(form: string, hexCase: (hex: string) => string): string {
  let written = '';
  for (let at = 0; at < form.length; at += 1) {
    const unit = form.charCodeAt(at);
    written += unit < 0x80 ? form[at] : `\\u${hexCase(unit.toString(16).padStart(4, '0'))}`;
  }
  return written;
}
