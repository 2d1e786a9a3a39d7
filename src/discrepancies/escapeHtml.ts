const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/**
 * Escapes text for HTML element content and quoted attribute values. Everything a partner or a person
 * typed goes through this before it reaches a page (partner files are untrusted). `null`/`undefined`
 * become the empty string. Not for unquoted attributes, URLs, `<script>` or `<style>` contents.
 */
export function escapeHtml(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  return String(value).replace(/[&<>"']/g, (c) => ENTITIES[c]);
}
