import { useQuery } from "@tanstack/react-query";
import { type OrganizationAction, userApi } from "../../lib/api";

/** Read again when a call is refused for the role (App.tsx): the role changed while the page was open. */
export const organizationAccessQueryKey = ["organization-members"] as const;

/**
 * The session's role in its organization and what it may do (GET /llm/organization/members): pages hide
 * what the role may not do. The server refuses it anyway (403/160); this only keeps it out of sight.
 */
export function useOrganizationAccess(hasOrganization: boolean) {
  const members = useQuery({
    queryKey: organizationAccessQueryKey,
    queryFn: userApi.organizationMembers,
    enabled: hasOrganization,
  });
  const actions = members.data?.you.actions;
  return {
    members,
    /** Unknown until read: nothing beyond what every member may do is shown meanwhile. */
    may: (action: OrganizationAction) => actions?.includes(action) ?? false,
  };
}
