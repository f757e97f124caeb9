/** Where a build's files are for its processes, on every scheduler (Heroku's `/app`). */
export const PROFILE_SCRIPTS_DIR = '/app/.profile.d';

/**
 * The shell script that runs a process command (a Procfile type's, a one-off `run`, a release
 * phase): first every `/app/.profile.d/*.sh` the build has, in name order, sourced by the shell
 * that then runs the command, so that what they export (a buildpack's PATH, such as the Python
 * buildpack's virtualenv) is the command's environment. Heroku's convention; a build without
 * such scripts runs the command as it is. The scripts are the app's own code, run as the app.
 */
export function withProfileScripts(command: string): string {
  return `for svc_profile in ${PROFILE_SCRIPTS_DIR}/*.sh; do if [ -f "$svc_profile" ]; then . "$svc_profile"; fi; done; unset svc_profile\n${command}`;
}
