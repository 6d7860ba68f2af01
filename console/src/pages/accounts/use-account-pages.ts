import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { adminApi } from "../../lib/api";

const pageRows = 100;

/** The search in force and the page of accounts it selects, read from the cursor of the page before. */
export function useAccountPages() {
  const [search, setSearch] = useState("");
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const page = useQuery({
    queryKey: ["admin", "accounts", search, cursor],
    queryFn: () => adminApi.accounts({ search, ...(cursor ? { cursor } : {}), limit: pageRows }),
    placeholderData: keepPreviousData,
  });
  /** A new search reads the accounts again from the first. */
  const applySearch = (next: string) => {
    setSearch(next);
    setCursors([undefined]);
  };
  return { page, cursors, setCursors, applySearch };
}
