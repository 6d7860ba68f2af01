import type { ImageSource } from "../../providers/provider";

/**
 * An image a client names by URL, as the upstreams can take it: an `https:` URL the upstream fetches itself,
 * or the bytes of a base64 `data:` URL. Every upstream protocol accepts these four media types; a URL of any
 * other scheme (plain `http:`, `file:`, …) is one no upstream is obliged to fetch, so it is refused here
 * rather than by the upstream after the hold is placed.
 */

export const imageMediaTypes = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;

const dataUrlPattern = /^data:([^;,]+);base64,(.*)$/s;
/** Standard alphabet, padded: the form every upstream decodes. Checked without decoding (bodies are large). */
const base64Pattern = /^[A-Za-z0-9+/]*={0,2}$/;

export type ImageUrlReading = { ok: true; image: ImageSource } | { ok: false; message: string };

export function readImageUrl(url: string): ImageUrlReading {
  if (url.startsWith("data:")) return readDataUrl(url);
  if (!URL.canParse(url)) return { ok: false, message: "must be an https URL or a base64 data URL" };
  if (new URL(url).protocol !== "https:")
    return { ok: false, message: "must be an https URL or a base64 data URL" };
  return { ok: true, image: { kind: "url", url } };
}

function readDataUrl(url: string): ImageUrlReading {
  const match = dataUrlPattern.exec(url);
  if (!match) return { ok: false, message: "must be a base64 data URL (data:<media type>;base64,<data>)" };
  const mediaType = match[1]!.toLowerCase();
  const data = match[2]!;
  if (!(imageMediaTypes as readonly string[]).includes(mediaType))
    return { ok: false, message: `media type must be one of ${imageMediaTypes.join(", ")}` };
  if (data.length === 0 || data.length % 4 !== 0 || !base64Pattern.test(data))
    return { ok: false, message: "data must be padded standard base64" };
  return { ok: true, image: { kind: "base64", mediaType, data } };
}
