import { UnreadableReference, imageReferences, labelStages, lexWord, readDockerfile } from '../src/dockerfile-references';

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

  it('takes a number for a stage only in COPY --from and only below the stages so far: elsewhere the engine looks it up as an image id prefix', () => {
    // `FROM 012345` finds an image whose id starts 012345 (another app's layer, say).
    expect(imageReferences('FROM 012345\nRUN cat /secret\n')).toEqual(['012345']);
    expect(imageReferences('FROM busybox AS a\nFROM busybox\nCOPY --from=0 /a /a\nCOPY --from=00 /a /a\nCOPY --from=123456 /s /s\n')).toEqual(['busybox', 'busybox', '123456']);
    expect(imageReferences('FROM busybox\nCOPY --from=1 /s /s\n')).toEqual(['busybox', '1']);
    expect(imageReferences('FROM busybox\nONBUILD COPY --from=0 /s /s\n')).toEqual(['busybox', '0']);
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

  it('reads a name as the engine does when it is hidden by quotes, escapes, a split line or a default', () => {
    expect(imageReferences('FROM "vic"\'tim\':3\n')).toEqual(['victim:3']);
    expect(imageReferences('FROM vi\\ctim:3\n')).toEqual(['victim:3']);
    // A continuation joins the lines as they are: no blank between "vic" and "tim".
    expect(imageReferences('FROM vic\\\ntim:3\n')).toEqual(['victim:3']);
    expect(imageReferences('FROM vic\\\n# a comment\n\ntim:3\n')).toEqual(['victim:3']);
    expect(imageReferences('ARG V=vic\nARG W=${V}tim\nFROM ${W}:3\n')).toEqual(['victim:3']);
    expect(imageReferences('FROM ${NOPE:-victim:3}\n')).toEqual(['victim:3']);
    expect(imageReferences('ARG X=1\nFROM ${X:+victim:3}\n')).toEqual(['victim:3']);
    expect(imageReferences('ARG T="vic""tim"\nFROM $T:3 AS b\nFROM b\n')).toEqual(['victim:3']);
  });

  it('lexes words like the builder: quotes, escapes inside double quotes, a lone dollar', () => {
    const args = new Map([['A', 'x']]);
    expect(lexWord('"a\\"b"', args)).toBe('a"b');
    expect(lexWord("'$A'", args)).toBe('$A');
    expect(lexWord('"$A"', args)).toBe('x');
    expect(lexWord('a$', args)).toBe('a$');
    expect(lexWord('`$A', args, '`')).toBe('$A');
  });

  it('refuses references it cannot read as the engine would', () => {
    expect(() => imageReferences('FROM ${BASE/x/y}\n')).toThrow(UnreadableReference);
    expect(() => imageReferences('FROM busybox\nARG X=victim:3\nCOPY --from=$X / /\n')).toThrow(UnreadableReference);
    expect(() => imageReferences('FROM busybox\nCOPY --from="victim:3" / /\n')).toThrow(UnreadableReference);
    expect(() => imageReferences('FROM "a b"\n')).toThrow(UnreadableReference);
  });

  it('refuses remote ADD sources however they are written', () => {
    for (const line of [
      'ADD http://127.0.0.1:8080/secret /s',
      'ADD https://169.254.169.254/latest/meta-data/ /m',
      'ADD "http"://10.0.0.1/x /x',
      'ADD h\\ttp:/\\/127.0.0.1/x /x',
      'ADD ["http://127.0.0.1/x", "/x"]',
      'ADD git@10.0.0.1:repo.git /r',
      'ARG U=http://127.0.0.1/\nADD $U /x',
      'ONBUILD ADD http://127.0.0.1/x /x',
      'ADD --chown=1:1 \\\n  http://127.0.0.1/x /x',
    ]) {
      expect(() => readDockerfile(`FROM busybox\n${line}\n`)).toThrow(/ADD/);
    }
    expect(readDockerfile('FROM busybox\nADD files.tar /x\n').images).toEqual(['busybox']);
  });

  it('refuses RUN flags (mounts of other images, networks, privileges)', () => {
    expect(() => readDockerfile('FROM busybox\nRUN --mount=type=bind,from=victim:3,target=/v cat /v/secret\n')).toThrow(/RUN --mount/);
    expect(() => readDockerfile('FROM busybox\nRUN --network=host wget http://127.0.0.1/\n')).toThrow(/RUN --network/);
    expect(() => readDockerfile('FROM --network=host busybox\n')).toThrow(/FROM/);
  });

  it('tells where each stage starts', () => {
    expect(readDockerfile('FROM a:1 \\\n  AS x\nRUN true\nFROM b:2\n').stageLines).toEqual([1, 3]);
  });

  it('labels every stage right after its FROM instruction', () => {
    const text = 'FROM a:1 \\\n  AS x\nRUN true\nFROM b:2';
    expect(labelStages(text, readDockerfile(text).stageLines, { 'svc.app': 'me', 'svc.app-uuid': 'u"1' })).toBe(
      'FROM a:1 \\\n  AS x\nLABEL "svc.app"="me" "svc.app-uuid"="u\\"1"\nRUN true\nFROM b:2\nLABEL "svc.app"="me" "svc.app-uuid"="u\\"1"',
    );
  });
});
