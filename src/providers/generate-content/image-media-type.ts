import { UnsupportedRequestError } from "../provider";

/**
 * A URL image goes upstream as `fileData {fileUri, mimeType}`, which the protocol fetches itself, and the
 * media type is required there. A URL does not state it, so it is read from the path's extension, for the
 * image types the protocol accepts; any other URL is refused before the call (a data: URL always works).
 */
const imageMediaTypes: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  heic: "image/heic",
  heif: "image/heif",
};

export function imageMediaTypeOfUrl(url: string): string {
  let pathname: string;
  try {
    pathname = new URL(url).pathname;
  } catch {
    throw new UnsupportedRequestError(`image_url: not a valid URL: ${url.slice(0, 100)}`);
  }
  const extension = /\.([a-z0-9]+)$/i.exec(pathname)?.[1]?.toLowerCase();
  const mediaType = extension === undefined ? undefined : imageMediaTypes[extension];
  if (mediaType === undefined) {
    throw new UnsupportedRequestError(
      "image_url: this model fetches image URLs only when the path ends in " +
        `${Object.keys(imageMediaTypes)
          .map((each) => `.${each}`)
          .join(", ")}; send other images as a data: URL`,
    );
  }
  return mediaType;
}
