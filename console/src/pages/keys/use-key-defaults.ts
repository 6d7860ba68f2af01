import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { userApi } from "../../lib/api";

const keyDefaultsQueryKey = ["key-defaults"] as const;

/**
 * The session's organization's models for its new keys, whether their dialog is open, and the save (or
 * clear: null) that closes it once the gateway took it.
 */
export function useKeyDefaults() {
  const client = useQueryClient();
  const [editing, setEditing] = useState(false);
  const read = useQuery({ queryKey: keyDefaultsQueryKey, queryFn: userApi.keyDefaults });
  const save = useMutation({
    mutationFn: userApi.setKeyDefaults,
    onSuccess: (saved) => {
      client.setQueryData(keyDefaultsQueryKey, saved);
      setEditing(false);
    },
  });
  const open = () => {
    save.reset();
    setEditing(true);
  };
  return { read, save, editing, open, close: () => setEditing(false) };
}
