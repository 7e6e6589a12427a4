/**
 * Server-sent events framing for response bodies read as they stream past: bytes in, events out,
 * by `eventsource-parser` (line ends LF, CR and CRLF, multi-line `data`, comments, a leading BOM).
 * The parser is bundled into the build, so it adds no runtime dependency.
 *
 * Memory is bounded: a line or an event that grows past `maxChars` characters is dropped whole
 * (a huge `response.completed` echoing a long prompt, say) and framing resumes at the next event.
 */
/*!
 * The build bundles eventsource-parser 3 (https://github.com/rexxars/eventsource-parser):
 *
 * MIT License
 *
 * Copyright (c) 2026 Espen Hovlandsdal <espen@hovlandsdal.com>
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy of this software
 * and associated documentation files (the "Software"), to deal in the Software without
 * restriction, including without limitation the rights to use, copy, modify, merge, publish,
 * distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the
 * Software is furnished to do so, subject to the following conditions:
 *
 * The above copyright notice and this permission notice shall be included in all copies or
 * substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING
 * BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
 * NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
 * DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 * OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
 */
import { type EventSourceParser, createParser } from "eventsource-parser";

/** One event: its `event:` type (`undefined` when the server sent none) and its `data`. */
export interface SseEvent {
  readonly event?: string | undefined;
  readonly data: string;
}

/** Decodes UTF-8 chunks and hands each complete event to `onEvent`. */
export class SseReader {
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser;
  private overflowed = false;

  constructor(onEvent: (event: SseEvent) => void, maxChars: number) {
    this.parser = createParser({
      onEvent,
      maxBufferSize: maxChars,
      onError: (error) => {
        if (error.type === "max-buffer-size-exceeded") this.overflowed = true;
      },
    });
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.feed(this.decoder.decode(chunk, { stream: true }));
  }

  /**
   * The body ended: an event cut short of its blank line is still handed over (servers that end
   * the stream right after their last `data:` line).
   */
  end(): void {
    this.feed(`${this.decoder.decode()}\n\n`);
  }

  private feed(text: string): void {
    this.parser.feed(text);
    if (this.overflowed) {
      // The parser stopped on an oversized event: drop it and frame what follows.
      this.overflowed = false;
      this.parser.reset();
    }
  }
}
