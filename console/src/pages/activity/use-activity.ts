import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { type ActivityFilters, userApi } from "../../lib/api";
import { addDays, seoulDateOf } from "../../lib/format";

export const activityPageRows = 50;

/**
 * The filters in force (the last 30 Seoul days to start), the account they apply to, and the page of
 * activity they select; the keys of that account name the rows' keys. The form's key and model choices are
 * those of the account chosen in the form, applied or not yet.
 */
export function useActivity() {
  const today = seoulDateOf(new Date());
  const [filters, setFilters] = useState<ActivityFilters>({ from: addDays(today, -29), to: today });
  const [isOrganization, setIsOrganization] = useState(false);
  const [chosenIsOrganization, setChosenIsOrganization] = useState(false);
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const pageIndex = cursors.length - 1;
  const keys = useQuery({ queryKey: ["keys", isOrganization], queryFn: () => userApi.keys(isOrganization) });
  const chosenKeys = useQuery({
    queryKey: ["keys", chosenIsOrganization],
    queryFn: () => userApi.keys(chosenIsOrganization),
  });
  const models = useQuery({
    queryKey: ["models", chosenIsOrganization],
    queryFn: () => userApi.models(chosenIsOrganization),
  });
  const page = useQuery({
    queryKey: ["activity", filters, isOrganization, cursors[pageIndex]],
    queryFn: () =>
      userApi.activity(filters, isOrganization, { cursor: cursors[pageIndex], limit: activityPageRows }),
    placeholderData: keepPreviousData,
  });
  /** New filters read the log again from its newest page. */
  const applyFilters = (next: ActivityFilters, nextIsOrganization: boolean) => {
    setFilters(next);
    setIsOrganization(nextIsOrganization);
    setChosenIsOrganization(nextIsOrganization);
    setCursors([undefined]);
  };
  return {
    filters,
    isOrganization,
    applyFilters,
    keys,
    chosenKeys,
    setChosenIsOrganization,
    models,
    page,
    cursors,
    setCursors,
    pageIndex,
  };
}
