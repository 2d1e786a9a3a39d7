/** `\r\n`, `\r` and `\n` each end one physical line, as an editor shows them. */
export function countLineBreaks(text: string): number {
  let breaks = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 10) {
      breaks++;
    } else if (code === 13) {
      breaks++;
      if (text.charCodeAt(i + 1) === 10) i++;
    }
  }
  return breaks;
}
