/**
 * A URL (or a text naming one, e.g. `https://user:pass@host/v1`) with every `user:password@` part removed,
 * for anything stored, logged, printed or shown: credentials in a partner's `baseUrl` belong to the request,
 * never to the run's `source`, a log line or a page. Text that is not a URL is returned with any
 * `scheme://userinfo@` inside it removed the same way.
 */
export function withoutCredentials(text: string): string {
  // `scheme://` then anything without `/`, `?`, `#`, `@` or whitespace up to the last `@` of the authority.
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/?#\s]*@/gi, '$1');
}
