import { chromium } from 'playwright-core';

/** Debian's Chromium; CI installs it (`apt-get install -y chromium`). REVIEW_CHROMIUM points elsewhere. */
export const CHROMIUM = process.env.REVIEW_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Headless as root, and without the background connections (updates, sync, safe browsing) that this
 * machine's closed network refuses many at a time.
 */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox', // as root (CI containers) Chromium refuses to start with its sandbox
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A headless Chromium for the review site's browser tests. */
export function launchChromium() {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}
