/*
 * What a Dockerfile makes the engine read and fetch, decided before the engine sees it: the
 * images of its FROM lines and COPY/ADD --from flags (also behind ONBUILD), and the sources
 * of its ADD lines. The Dockerfile parser (`dockerfile-ast`) decides where each instruction
 * starts and ends (parser directives, the escape character, continuation lines, comments);
 * the words of an instruction are then read as the engine's builder reads them: split on
 * blanks, quotes and escapes removed, `$NAME`, `${NAME}`, `${NAME:-word}` and `${NAME:+word}`
 * replaced with the global ARG defaults (the platform passes no build arguments).
 */
import { DockerfileParser, type Instruction } from 'dockerfile-ast';

/** A Dockerfile whose image references cannot be read literally, or that asks for what builds may not do. */
export class UnreadableReference extends Error {}

/** What an image reference may be made of once read: a name, a tag, a digest. */
const REFERENCE = /^[A-Za-z0-9[][A-Za-z0-9._:/@[\]-]*$/;

/** The text of one instruction as the engine reads it: continuation lines joined as they are, comment and blank lines inside dropped. */
function instructionText(lines: readonly string[], instruction: Instruction, escape: string): string {
  const { start, end } = instruction.getRange();
  const continuation = new RegExp(`${escape === '`' ? '`' : '\\\\'}[ \\t]*$`);
  let text = '';
  for (let index = start.line; index <= end.line; index += 1) {
    let line = (lines[index] ?? '').replace(/\r$/, '');
    if (index === start.line) line = line.trimStart();
    else if (/^\s*#/.test(line) || line.trim() === '') continue;
    const continued = continuation.test(line);
    text += continued ? line.replace(continuation, '') : line;
    if (!continued) break;
  }
  return text;
}

/**
 * Reads one word as the builder's shell lexer does, with `escape` as the escape character and
 * `args` the variables' values.
 * @throws UnreadableReference on a variable form the builder does not read the same way.
 */
export function lexWord(word: string, args: ReadonlyMap<string, string>, escape = '\\'): string {
  let position = 0;
  const variable = (): string => {
    // At a `$`.
    position += 1;
    const braced = word[position] === '{';
    if (braced) position += 1;
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(word.slice(position))?.[0];
    if (name === undefined) {
      if (braced) throw new UnreadableReference(`"${word}" uses a variable form the builder does not read`);
      return '$';
    }
    position += name.length;
    const value = args.get(name) ?? '';
    if (!braced) return value;
    if (word[position] === '}') {
      position += 1;
      return value;
    }
    const modifier = word.slice(position, position + 2);
    if (modifier !== ':-' && modifier !== ':+') throw new UnreadableReference(`"${word}" uses a variable form the builder does not read`);
    position += 2;
    const alternative = read('}');
    if (word[position] !== '}') throw new UnreadableReference(`"${word}" has an unclosed variable`);
    position += 1;
    if (modifier === ':-') return value === '' ? alternative : value;
    return value === '' ? '' : alternative;
  };
  const read = (stop: string | null): string => {
    let result = '';
    while (position < word.length && word[position] !== stop) {
      const ch = word[position] as string;
      if (ch === "'") {
        const close = word.indexOf("'", position + 1);
        if (close < 0) throw new UnreadableReference(`"${word}" has an unclosed quote`);
        result += word.slice(position + 1, close);
        position = close + 1;
      } else if (ch === '"') {
        position += 1;
        while (position < word.length && word[position] !== '"') {
          const inner = word[position] as string;
          if (inner === escape && ['"', '$', escape].includes(word[position + 1] ?? '')) {
            result += word[position + 1];
            position += 2;
          } else if (inner === '$') {
            result += variable();
          } else {
            result += inner;
            position += 1;
          }
        }
        if (word[position] !== '"') throw new UnreadableReference(`"${word}" has an unclosed quote`);
        position += 1;
      } else if (ch === escape) {
        result += word[position + 1] ?? '';
        position += 2;
      } else if (ch === '$') {
        result += variable();
      } else {
        result += ch;
        position += 1;
      }
    }
    return result;
  };
  return read(null);
}

/** What the builder may read and fetch for one Dockerfile. */
export interface DockerfileReads {
  /** The images it reads, in order, variables expanded; stage names, stage numbers and `scratch` left out. */
  images: string[];
  /** The 0-based line after which each build stage's FROM instruction ends. */
  stageLines: number[];
}

const words = (text: string): string[] => text.split(/[ \t\r\n]+/).filter((word) => word !== '');

/**
 * Reads what a Dockerfile makes the engine read.
 * @throws UnreadableReference when a reference cannot be read literally, an `ADD` fetches a
 * URL, or a `RUN` asks for mounts, networks or privileges of its own.
 */
export function readDockerfile(dockerfile: string): DockerfileReads {
  const parsed = DockerfileParser.parse(dockerfile);
  const escape = parsed.getEscapeCharacter();
  const lines = dockerfile.replace(/^\uFEFF/, '').split('\n');
  const args = new Map<string, string>();
  const stages = new Set<string>();
  const images: string[] = [];
  const stageLines: number[] = [];
  let seenFrom = false;
  // A number is a stage only in COPY/ADD --from, and only when an earlier stage has it; in FROM,
  // or past the stages, the engine takes it as an image name or id prefix: checked as one.
  const reference = (raw: string, where: string, stageNumbers = 0): void => {
    const value = lexWord(raw, args, escape);
    if (value === '' || stages.has(value.toLowerCase()) || value.toLowerCase() === 'scratch') return;
    if (/^[0-9]+$/.test(value) && Number(value) < stageNumbers) return;
    if (!REFERENCE.test(value)) throw new UnreadableReference(`the image reference "${raw}" of ${where} is not an image name`);
    images.push(value);
  };
  const check = (keyword: string, text: string, onbuild: boolean): void => {
    const all = words(text);
    const flags: string[] = [];
    while (all[0]?.startsWith('--')) flags.push(all.shift() as string);
    if (keyword === 'ARG' && !seenFrom && !onbuild) {
      for (const word of all) {
        const equals = word.indexOf('=');
        const name = equals > 0 ? word.slice(0, equals) : word;
        args.set(name, equals > 0 ? lexWord(word.slice(equals + 1), args, escape) : (args.get(name) ?? ''));
      }
    } else if (keyword === 'FROM') {
      if (flags.some((flag) => !flag.toLowerCase().startsWith('--platform='))) throw new UnreadableReference('FROM takes no other flag than --platform');
      if (all[0] !== undefined) reference(all[0], 'FROM');
      if (all[1]?.toUpperCase() === 'AS' && all[2] !== undefined) stages.add(lexWord(all[2], args, escape).toLowerCase());
    } else if (keyword === 'COPY' || keyword === 'ADD') {
      for (const flag of flags) {
        if (!flag.toLowerCase().startsWith('--from=')) continue;
        const value = flag.slice('--from='.length);
        // The builder does not expand variables in --from: a reference there must be written plainly.
        if (!REFERENCE.test(value)) throw new UnreadableReference(`the image reference "${value}" of ${keyword} --from must be written plainly, without quotes, escapes or variables`);
        // Behind ONBUILD the stages are another Dockerfile's: a number there is checked as an image.
        reference(value, `${keyword} --from`, onbuild ? 0 : stageLines.length);
      }
      if (keyword === 'ADD') {
        if (text.includes('$')) throw new UnreadableReference('ADD sources must be written without variables');
        const sources = all.map((word) => lexWord(word, args, escape).toLowerCase());
        if (text.includes('://') || sources.some((word) => word.includes('://') || word.startsWith('git@'))) {
          throw new UnreadableReference('ADD may not fetch a URL: builds fetch nothing on the platform\'s behalf; download in a RUN step or commit the file');
        }
      }
    } else if (keyword === 'RUN' && flags.length > 0) {
      throw new UnreadableReference(`RUN ${flags[0]?.split('=')[0] ?? ''} is not available to builds`);
    }
  };
  for (const instruction of parsed.getInstructions()) {
    let keyword = instruction.getKeyword().toUpperCase();
    let text = instructionText(lines, instruction, escape).slice(instruction.getInstruction().length);
    if (keyword === 'ONBUILD') {
      const [trigger] = words(text);
      keyword = (trigger ?? '').toUpperCase();
      text = text.trimStart().slice((trigger ?? '').length);
      check(keyword, text, true);
      continue;
    }
    check(keyword, text, false);
    if (keyword === 'FROM') {
      seenFrom = true;
      stageLines.push(instruction.getRange().end.line);
    }
  }
  return { images, stageLines };
}

/**
 * The image references of a Dockerfile, in order, with global ARG defaults expanded; names of
 * earlier build stages (and stage numbers) are left out.
 * @throws UnreadableReference as `readDockerfile` does.
 */
export function imageReferences(dockerfile: string): string[] {
  return readDockerfile(dockerfile).images;
}

/**
 * The Dockerfile with a `LABEL` of `labels` right after each stage's FROM instruction: every
 * intermediate image the classic builder keeps of the build (the parents of the final image)
 * then carries them too, not only the last one.
 */
export function labelStages(dockerfile: string, stageLines: readonly number[], labels: Readonly<Record<string, string>>): string {
  const label = `LABEL ${Object.entries(labels).map(([key, value]) => `${JSON.stringify(key)}=${JSON.stringify(value)}`).join(' ')}`;
  const lines = dockerfile.split('\n');
  for (const line of [...stageLines].sort((a, b) => b - a)) lines.splice(line + 1, 0, label);
  return lines.join('\n');
}
