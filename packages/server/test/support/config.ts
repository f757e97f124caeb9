import { ConfigError, loadConfig } from '../../src';

/** The error loadConfig throws for an environment, or null when it accepts it. */
export function failureOf(env: Record<string, string>): ConfigError | null {
  try {
    loadConfig(env);
    return null;
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
}
