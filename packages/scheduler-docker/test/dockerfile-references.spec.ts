import { UnreadableReference, imageReferences } from '../src/dockerfile-references';

describe('imageReferences', () => {
  it('lists FROM images and COPY --from images, leaving out stage names, stage numbers and scratch', () => {
    const dockerfile = [
      'FROM --platform=linux/amd64 node:20 AS build',
      'COPY --from=build /a /b',
      'COPY --chown=1:1 --from=tools:1 /bin/x /x',
      'from scratch',
      'COPY --from=0 /a /a',
      'FROM build',
    ].join('\n');

    expect(imageReferences(dockerfile)).toEqual(['node:20', 'tools:1']);
  });

  it('expands global ARG defaults in FROM, and reads through continuation lines, comments and ONBUILD', () => {
    const dockerfile = [
      'ARG BASE=victim:3 OTHER="quoted:1"',
      'FROM ${BASE}',
      'FROM $OTHER',
      'RUN echo \\',
      '# a comment inside',
      '  done',
      'FROM \\',
      '  split:2',
      'ONBUILD COPY --from=hidden:4 / /',
    ].join('\n');

    expect(imageReferences(dockerfile)).toEqual(['victim:3', 'quoted:1', 'split:2', 'hidden:4']);
  });

  it('follows the escape directive', () => {
    expect(imageReferences('# escape=`\nFROM `\n  ticked:1\n')).toEqual(['ticked:1']);
  });

  it('refuses references it cannot read literally', () => {
    expect(() => imageReferences('FROM ${BASE:-victim:3}\n')).toThrow(UnreadableReference);
    expect(() => imageReferences('FROM busybox\nARG X=victim:3\nCOPY --from=$X / /\n')).toThrow(UnreadableReference);
  });
});
