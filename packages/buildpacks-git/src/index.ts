export { GitBuildpackCatalog, BUILTIN_BUILDPACKS_DIR, type GitBuildpackCatalogOptions } from './git-buildpack-catalog';
export { BUILTIN_BUILDPACKS, isBuildpackDirectory, isBuildpackName } from './buildpack-directory';
export { BUILDPACK_FETCH, isFetchableRef, redactUrl } from './fetch-rules';
