/**
 * The last head a connection sent, parsed, and the head the router made of it: the heads on
 * one connection mostly repeat byte for byte (the same client, the same process), so each is
 * parsed and rewritten once. Parsing is a pure function of the head's text, so an identical
 * text is given the same parsed head, with every check it passed; a head that fails parsing is
 * never remembered. Only short heads are kept, so that an idle connection holds little memory.
 */

/** The longest head text remembered (characters). */
export const MEMO_MAX_CHARS = 2048;

export class HeadMemo<H> {
  private text = '';
  private head: H | null = null;
  private made = '';
  /** What `made` was made for besides the head (the answer's framing...); -1: nothing made. */
  private madeKey = -1;

  /** The parsed head of `text`: the one remembered when the text is the same, else `parse(text)` (whose errors are thrown as they are). */
  parsed(text: string, parse: (text: string) => H): H {
    if (this.head !== null && text === this.text) return this.head;
    this.head = null;
    this.text = '';
    this.madeKey = -1;
    const head = parse(text);
    if (text.length <= MEMO_MAX_CHARS) {
      this.text = text;
      this.head = head;
    }
    return head;
  }

  /** The head made of `head` for `key` before, or null. */
  madeOf(head: H, key: number): string | null {
    return head === this.head && key === this.madeKey ? this.made : null;
  }

  /** Remembers what was made of `head` for `key` (when `head` is the one remembered); returns `made`. */
  remember(head: H, key: number, made: string): string {
    if (head === this.head) {
      this.made = made;
      this.madeKey = key;
    }
    return made;
  }
}
