import type { AppJson } from './types';
import type { Session } from './users';

/** Creates the app `id` as `owner`, expecting 201, and returns it. */
export async function createApp(owner: Session, id: string): Promise<AppJson> {
  const res = await owner.api.post<AppJson>('/v1/apps/', { id });
  expect(res.status).toBe(201);
  return res.body;
}

/** Deploys a build of a fixed image to the app `id` as `owner`, with `procfile` if given, expecting 201. */
export async function deploy(owner: Session, id: string, procfile?: Record<string, string>): Promise<void> {
  const res = await owner.api.post(`/v1/apps/${id}/builds/`, { image: 'registry.example.com/demo:1', ...(procfile ? { procfile } : {}) });
  expect(res.status).toBe(201);
}
