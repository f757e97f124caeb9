import { takeLock } from '../../../scheduler-docker/test/support/host-lock';

/** A build of the controller image takes minutes on a busy two-core machine; another may be ahead of it. */
const WAIT_MS = 30 * 60_000;

/**
 * Runs a build of the controller image (scripts/build-image.sh --prebuilt) when no other test
 * process of this machine runs one: the script compiles the checkout in place (`npm run build`,
 * the same output files), and prunes the engine's untagged build stages, which another build
 * may still be using.
 */
export async function buildControllerImage(build: () => Promise<void>): Promise<void> {
  const release = await takeLock('controller image build', 'exclusive', WAIT_MS);
  try {
    await build();
  } finally {
    await release();
  }
}
