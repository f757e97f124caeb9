/*
 * The images a Dockerfile reads from: its FROM lines and COPY --from flags (also behind
 * ONBUILD). The engine builds every app in one image store, so the builder checks these
 * before a build and refuses a reference to another app's image.
 */

/** A Dockerfile whose image references cannot be read literally. */
export class UnreadableReference extends Error {}

const DIRECTIVE = /^#\s*([a-zA-Z]+)\s*=\s*(\S*)\s*$/;
const VARIABLE = /\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/** The instructions of a Dockerfile, one string each, with continuation lines joined and comments dropped. */
function instructions(text: string): string[] {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  let escape = '\\';
  // Parser directives come first, before any comment, blank line or instruction.
  for (const line of lines) {
    const match = DIRECTIVE.exec(line);
    if (match === null) break;
    if (match[1]?.toLowerCase() === 'escape' && (match[2] === '`' || match[2] === '\\')) escape = match[2];
  }
  const result: string[] = [];
  let current = '';
  for (const raw of lines) {
    const trimmed = raw.trim();
    if (current === '' && (trimmed === '' || trimmed.startsWith('#'))) continue;
    // Comment lines inside a continued instruction are dropped, as the engine does.
    if (current !== '' && trimmed.startsWith('#')) continue;
    const continued = trimmed.endsWith(escape);
    current += ` ${continued ? trimmed.slice(0, -escape.length) : trimmed}`;
    if (!continued) {
      result.push(current.trim());
      current = '';
    }
  }
  if (current.trim() !== '') result.push(current.trim());
  return result;
}

function expand(word: string, args: Map<string, string>): string {
  const value = word.replace(VARIABLE, (_all, braced: string | undefined, bare: string | undefined) => args.get((braced ?? bare) as string) ?? '');
  if (value.includes('$')) throw new UnreadableReference(`the image reference "${word}" uses a variable form the builder does not read`);
  return value;
}

/**
 * The image references of a Dockerfile, in order, with variables of global ARG defaults
 * expanded; names of earlier build stages (and stage numbers) are left out.
 * @throws UnreadableReference when a reference uses a variable form other than `$NAME`/`${NAME}`.
 */
export function imageReferences(dockerfile: string): string[] {
  const args = new Map<string, string>();
  const stages = new Set<string>();
  const references: string[] = [];
  let seenFrom = false;
  const add = (word: string): void => {
    const reference = expand(word, args);
    if (reference === '' || stages.has(reference.toLowerCase()) || /^[0-9]+$/.test(reference)) return;
    if (reference.toLowerCase() !== 'scratch') references.push(reference);
  };
  for (const instruction of instructions(dockerfile)) {
    let words = instruction.split(/\s+/);
    if (words[0]?.toUpperCase() === 'ONBUILD') words = words.slice(1);
    const keyword = words[0]?.toUpperCase();
    const rest = words.slice(1);
    if (keyword === 'ARG' && !seenFrom) {
      for (const word of rest) {
        const equals = word.indexOf('=');
        if (equals > 0) args.set(word.slice(0, equals), word.slice(equals + 1).replace(/^"(.*)"$/, '$1'));
        else if (!args.has(word)) args.set(word, '');
      }
    } else if (keyword === 'FROM') {
      seenFrom = true;
      const operands = rest.filter((word) => !word.startsWith('--'));
      if (operands[0] !== undefined) add(operands[0]);
      if (operands[1]?.toUpperCase() === 'AS' && operands[2] !== undefined) stages.add(operands[2].toLowerCase());
    } else if (keyword === 'COPY' || keyword === 'ADD') {
      for (const word of rest) {
        if (!word.startsWith('--')) break;
        if (!word.toLowerCase().startsWith('--from=')) continue;
        // Variables in a stage are not tracked: a reference there must be literal.
        if (word.includes('$')) throw new UnreadableReference(`the image reference "${word.slice('--from='.length)}" must be written without variables`);
        add(word.slice('--from='.length));
      }
    }
  }
  return references;
}
