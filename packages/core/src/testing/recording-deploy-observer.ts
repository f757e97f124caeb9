import type { DeployObserver, DeployOutcome } from '../ports/observers';

/** One deploy as a RecordingDeployObserver saw it; `outcome` is null while it runs. */
export interface ObservedDeploy {
  app: string;
  outcome: DeployOutcome | null;
}

/** A deploy observer for tests: records every deploy and how it ended. */
export class RecordingDeployObserver implements DeployObserver {
  readonly deploys: ObservedDeploy[] = [];

  deployStarted(app: string): (outcome: DeployOutcome) => void {
    const deploy: ObservedDeploy = { app, outcome: null };
    this.deploys.push(deploy);
    return (outcome) => {
      if (deploy.outcome !== null) throw new Error(`The deploy of ${app} ended twice`);
      deploy.outcome = outcome;
    };
  }
}
