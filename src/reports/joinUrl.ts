/** Appends `path` to `baseUrl` (`new URL(path, base)` would drop a path part such as `/api`). */
export function joinUrl(baseUrl: string, path: string): URL {
  return new URL(baseUrl.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`));
}
