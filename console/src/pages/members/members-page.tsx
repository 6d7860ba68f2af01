import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Card, ErrorMessage } from "../../components/ui";
import { type OrganizationMember, type OrganizationRole, userApi } from "../../lib/api";
import { resetWhenAccepted } from "../../lib/form-fields";
import { formatSeoulDateTime } from "../../lib/format";
import { type MessageKey, useI18n } from "../../lib/i18n";
import { inputLengthsMax } from "../../lib/input-bounds";
import { organizationAccessQueryKey, useOrganizationAccess } from "./use-organization-access";

/**
 * The organization's members and their roles (C14). Every member sees the list; owners and admins change
 * roles and give one to a user not listed yet; only owners are offered "owner" (the server says why else).
 */

const roleLabels: Record<OrganizationRole, MessageKey> = {
  owner: "roleOwner",
  admin: "roleAdmin",
  member: "roleMember",
};

export function MembersPage({ hasOrganization }: { hasOrganization: boolean }) {
  const { t } = useI18n();
  const access = useOrganizationAccess(hasOrganization);
  const client = useQueryClient();
  const grant = useMutation({
    mutationFn: ({ userId, role }: { userId: string; role: OrganizationRole }) =>
      userApi.setMemberRole(userId, role),
    onSuccess: () => client.invalidateQueries({ queryKey: organizationAccessQueryKey }),
  });
  if (!hasOrganization)
    return (
      <>
        <h1>{t("navMembers")}</h1>
        <p>{t("membersNoOrganization")}</p>
      </>
    );
  const data = access.members.data;
  const mayGrant = access.may("grant-roles");
  const offered: OrganizationRole[] =
    data?.you.role === "owner" ? ["owner", "admin", "member"] : ["admin", "member"];
  return (
    <>
      <h1>{t("navMembers")}</h1>
      {data && (
        <p data-testid="your-role">
          {t("yourRole")} <strong>{t(roleLabels[data.you.role])}</strong>
          {mayGrant ? "" : ` · ${t("membersReadOnly")}`}
        </p>
      )}
      <ErrorMessage error={access.members.error ?? grant.error} />
      {data && (
        <MembersTable
          members={data.data}
          offered={mayGrant ? offered : null}
          saving={grant.isPending}
          onGrant={(userId, role) => grant.mutate({ userId, role })}
        />
      )}
      {mayGrant && (
        <GrantCard offered={offered} onGrant={(userId, role) => grant.mutateAsync({ userId, role })} />
      )}
    </>
  );
}

function MembersTable(props: {
  members: readonly OrganizationMember[];
  /** The roles the session may give; null: it may give none. */
  offered: OrganizationRole[] | null;
  saving: boolean;
  onGrant(userId: string, role: OrganizationRole): void;
}) {
  const { t, language } = useI18n();
  // Only an owner changes an owner's role, and the last owner stays owner (the server refuses any other
  // role for them): no choice to offer then, and the owner is told why.
  const ownerCount = props.members.filter((member) => member.role === "owner").length;
  const mayChange = (member: OrganizationMember) =>
    props.offered !== null && (props.offered.includes("owner") || member.role !== "owner");
  const isLastOwner = (member: OrganizationMember) => member.role === "owner" && ownerCount === 1;
  return (
    <div className="table-scroll">
      <table>
        <thead>
          <tr>
            <th scope="col">{t("memberUser")}</th>
            <th scope="col">{t("memberRole")}</th>
            <th scope="col">{t("memberSince")}</th>
          </tr>
        </thead>
        <tbody>
          {props.members.map((member) => (
            <tr key={member.userId} data-testid={`member-row-${member.userId}`}>
              <td>{member.userId}</td>
              <td>
                {props.offered && mayChange(member) && isLastOwner(member) ? (
                  <>
                    {t("roleOwner")} <span className="muted">· {t("lastOwnerStays")}</span>
                  </>
                ) : props.offered && mayChange(member) ? (
                  // Keyed by the role: a role saved (or read again) starts the row's choice anew.
                  <RoleChangeForm
                    key={member.role}
                    member={member}
                    offered={props.offered}
                    saving={props.saving}
                    onGrant={props.onGrant}
                  />
                ) : (
                  t(roleLabels[member.role])
                )}
              </td>
              <td>{formatSeoulDateTime(member.memberSince, language)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * A member's role, given when saved: a closed select's arrow keys change its value at once, so a role
 * given on change would be given by a keyboard user still looking through the roles.
 */
function RoleChangeForm(props: {
  member: OrganizationMember;
  offered: OrganizationRole[];
  saving: boolean;
  onGrant(userId: string, role: OrganizationRole): void;
}) {
  const { t } = useI18n();
  const { member } = props;
  const [chosen, setChosen] = useState(member.role);
  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    props.onGrant(member.userId, chosen);
  }
  return (
    <form className="row" onSubmit={submit}>
      <RoleSelect
        label={`${t("changeRole")} ${member.userId}`}
        value={chosen}
        offered={props.offered}
        disabled={props.saving}
        onChange={setChosen}
      />
      {chosen !== member.role && (
        <button type="submit" disabled={props.saving}>
          {t("saveRole")} <span className="visually-hidden">{member.userId}</span>
        </button>
      )}
    </form>
  );
}

function RoleSelect(props: {
  label: string;
  value: OrganizationRole;
  offered: OrganizationRole[];
  disabled?: boolean;
  onChange(role: OrganizationRole): void;
}) {
  const { t } = useI18n();
  const roles = props.offered.includes(props.value) ? props.offered : [props.value, ...props.offered];
  return (
    <select
      aria-label={props.label}
      value={props.value}
      disabled={props.disabled}
      onChange={(event) => props.onChange(event.target.value as OrganizationRole)}
    >
      {roles.map((role) => (
        <option key={role} value={role}>
          {t(roleLabels[role])}
        </option>
      ))}
    </select>
  );
}

/** A role for a user the organization has not listed yet (the platform says who belongs). */
function GrantCard(props: {
  offered: OrganizationRole[];
  onGrant(userId: string, role: OrganizationRole): Promise<unknown>;
}) {
  const { t } = useI18n();
  const [role, setRole] = useState<OrganizationRole>("member");
  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const userId = String(new FormData(form).get("userId") ?? "").trim();
    if (userId === "") return;
    resetWhenAccepted(form, props.onGrant(userId, role));
  }
  return (
    <Card title={t("grantRoleTitle")}>
      <form className="row wrap" onSubmit={submit}>
        <label>
          {t("memberUser")} <input name="userId" required maxLength={inputLengthsMax.accountId} />
        </label>
        <RoleSelect label={t("memberRole")} value={role} offered={props.offered} onChange={setRole} />
        <button type="submit">{t("grantRole")}</button>
      </form>
    </Card>
  );
}
