/**
 * A ZIP archive would pass what the classic (non-ZIP64) format can record: an entry or the archive of
 * 4 GiB or more, or 65,535 entries. Nothing after the failing entry is written, so the archive is left
 * without its central directory and no reader takes it for a complete file.
 */
export class ZipLimitError extends Error {
  override readonly name = 'ZipLimitError';
}
