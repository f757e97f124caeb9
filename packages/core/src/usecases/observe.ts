import { DomainError } from '../errors';
import { NO_DEPLOY_OBSERVER, type DeployObserver, type DeployOutcome } from '../ports/observers';

/** The outcome of a deploy that threw `error`. */
export function deployOutcomeOf(error: unknown): DeployOutcome {
  return DomainError.is(error) && error.kind !== 'unavailable' ? 'rejected' : 'failed';
}

/**
 * Reports the deploy `running` (already started) to the observer, and settles as it does.
 * An observer that throws changes nothing about the deploy.
 */
export async function observeDeploy<T>(deps: { deployObserver?: DeployObserver }, app: string, running: Promise<T>): Promise<T> {
  let ended: (outcome: DeployOutcome) => void;
  try {
    ended = (deps.deployObserver ?? NO_DEPLOY_OBSERVER).deployStarted(app);
  } catch {
    ended = () => undefined;
  }
  const report = (outcome: DeployOutcome): void => {
    try {
      ended(outcome);
    } catch {
      // Watching a deploy must never change its result.
    }
  };
  try {
    const result = await running;
    report('succeeded');
    return result;
  } catch (error) {
    report(deployOutcomeOf(error));
    throw error;
  }
}
