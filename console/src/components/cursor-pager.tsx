import type { Dispatch, ReactNode, SetStateAction } from "react";
import { useI18n } from "../lib/i18n";

/**
 * Newer / Older over pages read by cursor, newest first. The cursors of the pages already seen are kept
 * (the first is undefined), so Newer goes back without the server paging backwards; `children` says where
 * in the list the page is.
 */
export function CursorPager(props: {
  label: string;
  cursors: readonly (string | undefined)[];
  setCursors: Dispatch<SetStateAction<(string | undefined)[]>>;
  /** The cursor of the next (older) page; none on the last page. */
  next: string | null | undefined;
  fetching: boolean;
  children?: ReactNode;
}) {
  const { t } = useI18n();
  const { next, setCursors } = props;
  return (
    <nav className="pager" aria-label={props.label}>
      <button
        type="button"
        disabled={props.cursors.length === 1 || props.fetching}
        onClick={() => setCursors((current) => current.slice(0, -1))}
      >
        {t("newerPage")}
      </button>
      {props.children}
      <button
        type="button"
        disabled={!next || props.fetching}
        onClick={() => {
          if (next) setCursors((current) => [...current, next]);
        }}
      >
        {t("olderPage")}
      </button>
    </nav>
  );
}
