<?php

function handle_notify(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    $bar = $param;
    $bar = trim($bar);
    $sql = "SELECT * FROM users WHERE name = '" . $bar . "'";
    $rows = $db->query($sql);
}
