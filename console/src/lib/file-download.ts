import { useState } from "react";
import type { GatewayFile } from "./api";

/** Hands a file the page holds to the browser's downloads, under `fileName`. */
export function saveFile(blob: Blob, fileName: string): void {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = fileName;
  link.click();
  // Not at once: a browser may still be reading the file when click() returns, and a revoked URL fails it.
  setTimeout(() => URL.revokeObjectURL(link.href), objectUrlLifetimeMs);
}

/** How long a saved file's URL outlives its click. */
const objectUrlLifetimeMs = 60_000;

/**
 * A file of the gateway's read by the page, then saved: unlike a plain download link, a refusal reaches the
 * page (said beside the button; a 401 has the page ask for its session again) rather than failing silently
 * in the browser's downloads.
 */
export function useFileDownload() {
  const [downloading, setDownloading] = useState(false);
  const [error, setError] = useState<unknown>(null);
  async function download(read: () => Promise<GatewayFile>, fallbackName: string) {
    setDownloading(true);
    setError(null);
    try {
      const file = await read();
      saveFile(file.blob, file.fileName ?? fallbackName);
    } catch (caught) {
      setError(caught);
    } finally {
      setDownloading(false);
    }
  }
  return { downloading, error, download };
}
