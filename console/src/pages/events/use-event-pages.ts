import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { adminApi } from "../../lib/api";

const pageRows = 100;

export type EventFilter = { stream: string; type: string };

/** The filter in force and the page of events it selects, read `before` the last position shown. */
export function useEventPages() {
  const [filter, setFilter] = useState<EventFilter>({ stream: "", type: "" });
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const pageIndex = cursors.length - 1;
  const page = useQuery({
    queryKey: ["admin", "events", filter, cursors[pageIndex]],
    queryFn: () =>
      adminApi.events({
        ...(filter.stream ? { stream: filter.stream } : {}),
        ...(filter.type ? { type: filter.type } : {}),
        before: cursors[pageIndex],
        limit: pageRows,
      }),
    placeholderData: keepPreviousData,
  });
  /** A new filter reads the ledger again from its newest event. */
  const applyFilter = (next: EventFilter) => {
    setFilter(next);
    setCursors([undefined]);
  };
  return { page, cursors, setCursors, applyFilter };
}
