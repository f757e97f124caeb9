/*
 * The Docker Engine adapter: a scheduler running each container of a release as an engine
 * container, and an image builder for git pushes. Its exports arrive with the classes.
 */
export { APP_LABEL, APP_UID, APP_UUID_LABEL, DockerImageBuilder, type DockerImageBuilderOptions } from './image-builder';
export { UnreadableReference, imageReferences } from './dockerfile-references';
export { dockerAt } from './docker-host';
