"""What a person sees of a job: the task table (view), the job page and the report, served by
the AppMaster and drawn again by the client."""
